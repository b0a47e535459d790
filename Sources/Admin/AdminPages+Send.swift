import Foundation
import HTTPRouting
import HeraldCore

extension AdminConsole {
    static let pushTypes = [
        "alert", "background", "liveactivity", "voip", "complication", "fileprovider", "mdm", "location",
        "pushtotalk", "widgets",
    ]
    static let defaultPayload = #"{"aps": {"alert": {"title": "Herald", "body": "A test push"}}}"#

    /// The form, filled with `values`; no form for a read-only session.
    func sendForm(_ context: Context, values: AdminForm = AdminForm([])) -> String {
        var html = HTML()
        guard context.mayChange else {
            html.element("p", "A read-only key cannot send: sign in with one of HERALD_API_KEYS.", ["class": "hint"])
            return html.markup
        }
        html.open("form", ["method": "post", "action": "/admin/send", "class": "stacked", "id": "send-form"])
        html.open("input", ["type": "hidden", "name": "csrf", "value": context.session.csrf])
        for (name, label, placeholder) in [
            ("token", "Device token", "64 or more hexadecimal characters"),
            ("app", "App", "left empty: the default app"),
        ] {
            html.open("label")
            html.element("span", label)
            html.open("input", ["type": "text", "name": name, "value": values[name] ?? "", "placeholder": placeholder])
            html.close("label")
        }
        html.open("label")
        html.element("span", "Environment")
        html.open("select", ["name": "environment"])
        html.element("option", "the app's default", ["value": ""])
        for environment in ["production", "sandbox"] {
            if values["environment"] == environment {
                html.element("option", environment, ["value": environment, "selected": "selected"])
            } else {
                html.element("option", environment, ["value": environment])
            }
        }
        html.raw("</select></label><label><span>Push type</span>")
        html.open("select", ["name": "push_type"])
        for type in Self.pushTypes {
            if (values["push_type"] ?? "alert") == type {
                html.element("option", type, ["value": type, "selected": "selected"])
            } else {
                html.element("option", type, ["value": type])
            }
        }
        html.raw("</select></label><label><span>Payload (JSON)</span>")
        html.element("textarea", values["payload"] ?? Self.defaultPayload, ["name": "payload", "rows": "6"])
        html.raw("</label><button type=\"submit\">Send</button></form>")
        return html.markup
    }

    func sendPage(_ context: Context) -> AdminPage {
        AdminPage(title: "Send a test push", content: sendForm(context))
    }

    /// Sends the form's push as `POST /v1/notifications?wait=true` and shows APNs' answer under the
    /// form, still filled in.
    func send(_ context: Context, form: AdminForm) async -> AdminOutcome {
        var html = HTML()
        html.raw(sendForm(context, values: form))
        html.element("h2", "Answer")
        let payloadText = form["payload"] ?? ""
        guard let payload = try? JSONValue(parsing: Array(payloadText.utf8)) else {
            html.element(
                "p",
                "The payload is not JSON: write a JSON object such as \(Self.defaultPayload).",
                ["class": "error", "role": "alert"]
            )
            var page = AdminPage(title: "Send a test push", content: html.markup, status: 400)
            page.notice = nil
            return .page(page)
        }
        var body: [String: JSONValue] = [
            "tokens": [.string(form["token"] ?? "")],
            "payload": payload,
            "push_type": .string(form["push_type"] ?? "alert"),
        ]
        for name in ["app", "environment"] {
            if let value = form[name], !value.isEmpty { body[name] = .string(value) }
        }
        let answer = await api.call(
            "POST",
            "/v1/notifications",
            query: [("wait", "true")],
            body: .object(body),
            requestID: context.request.requestID
        )
        logger.notice(
            "admin sent a test push",
            metadata: ["status": .int(answer.status), "push_type": .string(form["push_type"] ?? "alert")]
        )
        if answer.isSuccess, let json = answer.json {
            let results = json["results"]?.arrayValue ?? []
            html.table(
                ["Token", "Result", "Reason", "APNs id"],
                rows: results.map { result in
                    [
                        HTML.cell(result["token"]?.display),
                        result["status"]?.display.map(HTML.badge) ?? HTML.cell(nil),
                        HTML.cell(result["reason"]?.display), HTML.cell(result["apns_id"]?.display),
                    ]
                },
                empty: "No answer yet: the notification is \(json["status"]?.display ?? "pending").",
                id: "send-result"
            )
            if let id = json["id"]?.stringValue {
                html.open("p")
                html.link("The notification", to: "/admin/notifications/" + id)
                html.close("p")
            }
        } else {
            html.element("p", answer.errorMessage, ["class": "error", "role": "alert", "id": "send-error"])
        }
        return .page(AdminPage(title: "Send a test push", content: html.markup, status: answer.isSuccess ? 200 : 400))
    }

    // MARK: Lock screens (the simulator's virtual devices)

    /// Whether `/simulator` is served (`herald serve --simulator`), asked once.
    func simulatorPresent(_ requestID: String) async -> Bool {
        (try? await simulatorCheck.value { [api] in
            await api.call("GET", "/simulator/devices", requestID: requestID).status == 200
        }) ?? false
    }

    func lockScreens(_ context: Context) async -> AdminPage {
        let answer = await api.call("GET", "/simulator/devices", requestID: context.request.requestID)
        guard answer.isSuccess, let json = answer.json else {
            return AdminPage.message(
                status: 404,
                title: "Lock screens",
                "The lock screens are the built-in simulator's virtual devices: start Herald with herald serve --simulator "
                    + "(make run without Apple credentials)."
            )
        }
        var html = HTML()
        let devices = json["devices"]?.arrayValue ?? []
        if devices.isEmpty {
            html.element(
                "p",
                "No virtual device holds a Live Activity yet: start one (POST /v1/live-activities).",
                ["class": "empty"]
            )
        }
        html.raw("<div class=\"phones\">")
        for device in devices {
            html.open("section", ["class": "phone"])
            html.element(
                "p",
                "Device " + String((device["device_token"]?.stringValue ?? "").prefix(8)) + "…",
                ["class": "device"]
            )
            html.element("p", "9:41", ["class": "clock"])
            for activity in device["activities"]?.arrayValue ?? [] {
                html.open("article", ["class": "activity"])
                html.element("h3", activity["attributes_type"]?.display ?? "Live Activity")
                if let alert = activity["alert"], alert != .null {
                    html.element(
                        "p",
                        [alert["title"]?.display, alert["body"]?.display].compactMap { $0 }.joined(separator: " · "),
                        ["class": "alert"]
                    )
                }
                html.open("dl")
                for (key, value) in (activity["content_state"]?.objectValue ?? [:]).sorted(by: { $0.key < $1.key }) {
                    html.element("dt", key)
                    html.element("dd", value.display ?? "–")
                }
                html.close("dl")
                html.element("p", activity["state"]?.display ?? "", ["class": "state"])
                html.close("article")
            }
            html.close("section")
        }
        html.raw("</div>")
        return AdminPage(title: "Lock screens", content: html.markup)
    }
}
