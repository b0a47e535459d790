import Foundation
import HTTPRouting
import HeraldCore
import HeraldCrypto
import HeraldFeature

extension AdminConsole {
    /// Every route of the console, with authentication `.none`: the session cookie is the
    /// credential (``page(_:_:)``, ``change(_:_:)``).
    var routes: [FeatureRoute] {
        let console = self
        var routes: [FeatureRoute] = []
        func get(_ pattern: String, _ render: @escaping @Sendable (Context) async throws -> AdminPage) {
            routes.append(
                FeatureRoute("GET", pattern, authentication: .none, query: nil) { request in
                    try await console.page(request, render)
                }
            )
        }
        func post(
            _ pattern: String,
            maxBodySize: Int = 4_096,
            _ perform: @escaping @Sendable (Context, AdminForm) async throws -> AdminOutcome
        ) {
            var route = FeatureRoute("POST", pattern, authentication: .none, query: [], maxBodySize: maxBodySize) {
                request in try await console.change(request, perform)
            }
            route.bodyFormat = .form
            routes.append(route)
        }
        @Sendable func id(_ context: Context) -> String { context.request.parameters["id"] ?? "" }

        get("/admin") { try await console.overview($0) }
        get("/admin/notifications") { await console.notifications($0) }
        get("/admin/notifications/{id}") { await console.notification($0, id: id($0)) }
        post("/admin/notifications/{id}/cancel") { context, _ in
            await console.cancelNotification(context, id: id(context))
        }
        get("/admin/live-activities") { await console.liveActivities($0) }
        get("/admin/live-activities/{id}") { await console.liveActivity($0, id: id($0)) }
        get("/admin/devices") { await console.devices($0) }
        get("/admin/jobs") { try await console.jobs($0) }
        post("/admin/jobs/{id}/retry") { context, _ in await console.changeJob(context, id: id(context), retry: true) }
        post("/admin/jobs/{id}/cancel") { context, _ in await console.changeJob(context, id: id(context), retry: false)
        }
        get("/admin/webhooks") { await console.webhooks($0) }
        post("/admin/webhooks/{id}/test") { context, _ in await console.sendTestEvent(context, id: id(context)) }
        get("/admin/wake-schedules") { await console.wakeSchedules($0) }
        get("/admin/wake-schedules/{id}") { await console.wakeSchedule($0, id: id($0)) }
        get("/admin/channels") { await console.channels($0) }
        get("/admin/send") { console.sendPage($0) }
        post("/admin/send", maxBodySize: 16 * 1024) { context, form in await console.send(context, form: form) }
        get("/admin/lock-screens") { await console.lockScreens($0) }

        routes.append(
            FeatureRoute("GET", "/admin/sign-in", authentication: .none, query: nil) { request in
                console.signInPage(request)
            }
        )
        var signIn = FeatureRoute("POST", "/admin/sign-in", authentication: .none, query: nil, maxBodySize: 4_096) {
            request in try await console.signIn(request)
        }
        signIn.bodyFormat = .form
        routes.append(signIn)
        var signOut = FeatureRoute("POST", "/admin/sign-out", authentication: .none, query: [], maxBodySize: 4_096) {
            request in try await console.signOut(request)
        }
        signOut.bodyFormat = .form
        routes.append(signOut)
        routes.append(
            FeatureRoute("GET", "/admin/assets/admin.css", authentication: .none, query: nil) { _ in
                AdminAssets.response(AdminAssets.css, type: "text/css; charset=utf-8")
            }
        )
        routes.append(
            FeatureRoute("GET", "/admin/assets/admin.js", authentication: .none, query: nil) { _ in
                AdminAssets.response(AdminAssets.javascript, type: "text/javascript; charset=utf-8")
            }
        )
        return routes
    }

    // MARK: Signing in and out

    /// The sign-in form. Its POST is checked against a token set in a cookie here (the form's
    /// CSRF token before there is a session).
    func signInPage(_ request: HTTPRequest, message: String? = nil, status: Int = 200) -> HTTPResponse {
        let token = Hex.encode(SecureRandom.bytes(16))
        var html = HTML()
        if keyring.isEmpty {
            html.element(
                "p",
                "No key can sign in: set HERALD_API_KEYS (and, for keys that may only read, HERALD_ADMIN_READONLY_KEYS), "
                    + "then restart Herald.",
                ["class": "error", "role": "alert"]
            )
        }
        if let message { html.element("p", message, ["class": "error", "role": "alert", "id": "sign-in-error"]) }
        html.open("form", ["method": "post", "action": "/admin/sign-in", "class": "stacked sign-in"])
        html.open("input", ["type": "hidden", "name": "csrf", "value": token])
        html.open("input", ["type": "hidden", "name": "next", "value": Self.safeNext(request.queryValue("next"))])
        html.raw("<label><span>API key</span>")
        html.open(
            "input",
            [
                "type": "password", "name": "key", "autocomplete": "current-password", "required": "required",
                "id": "key",
            ]
        )
        html.raw("</label><button type=\"submit\">Sign in</button></form>")
        html.element(
            "p",
            "One of HERALD_API_KEYS, or of HERALD_ADMIN_READONLY_KEYS to look without changing anything.",
            ["class": "hint"]
        )
        var page = AdminPage(title: "Sign in", content: html.markup, status: status)
        page.cookies = [setCookie(Self.signInCookieName, token, maxAge: 3_600)]
        return page.response(path: request.path)
    }

    func signIn(_ request: HTTPRequest) async throws -> HTTPResponse {
        let form = try AdminForm(request)
        guard let presented = form["csrf"], let expected = Self.cookie(Self.signInCookieName, in: request),
            ConstantTime.equal(presented, expected)
        else {
            return signInPage(
                request,
                message: "The sign-in form had expired or came from another page: sign in again from this one.",
                status: 403
            )
        }
        let key = (form["key"] ?? "").trimmingCharacters(in: .whitespaces)
        guard !key.isEmpty, key.utf8.count <= 512, let role = keyring.role(ofKey: key) else {
            signIns.increment(labels: [("result", "refused")])
            logger.warning(
                "admin sign-in refused: the key is not one that signs in",
                metadata: ["client": .string(request.remoteAddress)]
            )
            return signInPage(
                request,
                message: "That key does not sign in: use one of HERALD_API_KEYS or HERALD_ADMIN_READONLY_KEYS.",
                status: 401
            )
        }
        let (token, _) = try await sessions.create(
            keyDigest: SHA256.hash(Array(key.utf8)),
            role: role,
            now: clock.now(),
            ttl: settings.sessionTTL
        )
        signIns.increment(labels: [("result", "signed_in")])
        logger.notice(
            "admin signed in",
            metadata: ["role": .string(role.rawValue), "client": .string(request.remoteAddress)]
        )
        return Self.redirect(
            Self.safeNext(form["next"]),
            cookies: [
                setCookie(Self.cookieName, token, maxAge: Int(settings.sessionTTL)),
                setCookie(Self.signInCookieName, "", maxAge: 0),
            ]
        )
    }

    func signOut(_ request: HTTPRequest) async throws -> HTTPResponse {
        guard let session = try await session(of: request) else { return Self.redirect("/admin/sign-in") }
        let form = try AdminForm(request)
        guard let presented = form["csrf"], ConstantTime.equal(presented, session.csrf) else {
            return AdminPage.message(
                status: 403,
                title: "Form refused",
                "This form did not carry the session's CSRF token: reload the page and sign out again."
            ).response(path: request.path)
        }
        try await sessions.delete(id: session.id)
        logger.notice("admin signed out", metadata: ["role": .string(session.role.rawValue)])
        return Self.redirect(
            "/admin/sign-in",
            notice: nil,
            cookies: [setCookie(Self.cookieName, "", maxAge: 0)]
        )
    }

    /// Where to go after signing in: a console path, never another site.
    static func safeNext(_ next: String?) -> String {
        guard let next, next.hasPrefix("/admin"), !next.hasPrefix("//"), !next.contains("\\"),
            !next.hasPrefix("/admin/sign-")
        else { return "/admin" }
        return next
    }
}
