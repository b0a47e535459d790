import HTTPRouting

/// One page of the console: its title, its content, and the layout around it.
struct AdminPage: Sendable {
    var status = 200
    var title: String
    /// The content, already escaped (``HTML``).
    var content: String
    /// The signed-in session, for the navigation and the sign-out form; `nil` on the sign-in page.
    var session: AdminSession?
    /// A line shown above the content (what a change did), from the `notice` query parameter.
    var notice: String?
    var cookies: [String] = []
    /// Whether the simulator's lock screens are in the navigation (`herald serve --simulator`).
    var simulator = false

    init(title: String, content: String, status: Int = 200) {
        self.title = title
        self.content = content
        self.status = status
    }

    /// The sections of the navigation: path and name.
    static let sections: [(path: String, name: String)] = [
        ("/admin", "Overview"),
        ("/admin/notifications", "Notifications"),
        ("/admin/live-activities", "Live Activities"),
        ("/admin/devices", "Devices"),
        ("/admin/jobs", "Jobs"),
        ("/admin/webhooks", "Webhooks"),
        ("/admin/wake-schedules", "Wake schedules"),
        ("/admin/channels", "Channels"),
        ("/admin/send", "Send a test push"),
        ("/admin/lock-screens", "Lock screens"),
    ]

    /// Headers of every console answer: no caching, no framing, no script or style but the
    /// console's own.
    static let securityHeaders: HTTPHeaders = [
        "Cache-Control": "no-store",
        "Content-Security-Policy":
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
            + "frame-ancestors 'none'; base-uri 'none'",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "same-origin",
        "X-Frame-Options": "DENY",
    ]

    static func message(status: Int, title: String, _ text: String) -> AdminPage {
        var html = HTML()
        html.element("p", text, ["class": "message"])
        return AdminPage(title: title, content: html.markup, status: status)
    }

    func response(path: String) -> HTTPResponse {
        var html = HTML()
        html.raw("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">")
        html.raw("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">")
        html.element("title", "\(title) · Herald")
        html.raw("<link rel=\"stylesheet\" href=\"/admin/assets/admin.css\">")
        html.raw("<script src=\"/admin/assets/admin.js\" defer></script></head><body>")
        html.raw("<header><a class=\"brand\" href=\"/admin\">Herald</a>")
        if let session {
            html.raw("<nav>")
            for section in Self.sections where section.path != "/admin/lock-screens" || simulator {
                let current =
                    section.path == "/admin" ? path == "/admin" : path.hasPrefix(section.path)
                if current {
                    html.link(section.name, to: section.path, ["aria-current": "page"])
                } else {
                    html.link(section.name, to: section.path)
                }
            }
            html.raw("</nav>")
            html.open("form", ["method": "post", "action": "/admin/sign-out", "class": "sign-out"])
            html.open("input", ["type": "hidden", "name": "csrf", "value": session.csrf])
            html.element("span", session.role == .readOnly ? "read-only" : "operator", ["class": "role"])
            html.raw("<button type=\"submit\">Sign out</button></form>")
        }
        html.raw("</header><main>")
        html.element("h1", title)
        if let notice { html.element("p", notice, ["class": "notice", "role": "status"]) }
        html.raw(content)
        html.raw("</main></body></html>")
        var headers = Self.securityHeaders
        headers.add(name: "Content-Type", value: "text/html; charset=utf-8")
        for cookie in cookies { headers.add(name: "Set-Cookie", value: cookie) }
        return HTTPResponse(status: status, headers: headers, body: Array(html.markup.utf8))
    }
}
