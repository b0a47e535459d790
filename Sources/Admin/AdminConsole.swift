import Foundation
import HTTPRouting
import HeraldCore
import HeraldCrypto
import HeraldFeature
import Jobs
import Storage
import Synchronization

/// The admin console at `/admin`: server-rendered pages behind a session cookie made by signing
/// in with an API key (``AdminKeyring``), every change a form carrying the session's CSRF token.
///
/// Every route is declared here with authentication `.none`: the session, not a bearer key, is
/// the credential, checked by ``page(_:_:)`` and ``change(_:_:)`` before anything is read.
struct AdminConsole: Sendable {
    let settings: AdminSettings
    let keyring: AdminKeyring
    let sessions: AdminSessionStore
    let api: AdminAPI
    let queue: JobQueue
    let trends: AdminTrends
    let queueSummary: CachedValue<JobQueue.Summary>
    let simulatorCheck: CachedValue<Bool>
    let clock: any HeraldClock
    let logger: Logger
    let signIns: Counter

    static let cookieName = "herald_admin"
    static let signInCookieName = "herald_admin_sign_in"

    init(
        settings: AdminSettings,
        keyring: AdminKeyring,
        database: any Database,
        api: AdminAPI,
        queue: JobQueue,
        trends: AdminTrends,
        clock: any HeraldClock,
        logger: Logger,
        metrics: MetricsRegistry = .shared
    ) {
        self.settings = settings
        self.keyring = keyring
        self.sessions = AdminSessionStore(database: database)
        self.api = api
        self.queue = queue
        self.trends = trends
        self.queueSummary = CachedValue(lifetime: 10, clock: clock)
        self.simulatorCheck = CachedValue(lifetime: 3_600, clock: clock)
        self.clock = clock
        self.logger = logger
        self.signIns = metrics.counter(
            "herald_admin_sign_ins_total",
            help: "Sign-ins to the admin console by result (signed_in, refused)."
        )
    }

    // MARK: Sessions

    /// What a page of a signed-in session is rendered with.
    struct Context: Sendable {
        var session: AdminSession
        var request: HTTPRequest
        var path: String { request.path }
        var mayChange: Bool { session.role.mayChange }
    }

    /// The session the request's cookie names, if it is live and its key still signs in.
    func session(of request: HTTPRequest) async throws -> AdminSession? {
        guard let token = Self.cookie(Self.cookieName, in: request),
            let session = try await sessions.find(token: token, now: clock.now()),
            keyring.role(ofDigest: session.keyDigest) == session.role
        else { return nil }
        return session
    }

    /// A page: the session's, or a redirect to the sign-in page that comes back here.
    func page(
        _ request: HTTPRequest,
        _ render: @Sendable (Context) async throws -> AdminPage
    ) async throws -> HTTPResponse {
        guard let session = try await session(of: request) else { return signInRedirect(request) }
        let context = Context(session: session, request: request)
        var page = try await render(context)
        page.session = session
        page.notice = page.notice ?? request.queryValue("notice")
        page.simulator = await simulatorPresent(request.requestID)
        return page.response(path: request.path)
    }

    /// A change (a form's POST): only for a session whose key may change things and whose form
    /// carries its CSRF token; answered by a redirect to the page to show next (`303`).
    func change(
        _ request: HTTPRequest,
        _ perform: @Sendable (Context, AdminForm) async throws -> AdminOutcome
    ) async throws -> HTTPResponse {
        guard let session = try await session(of: request) else { return signInRedirect(request) }
        let form = try AdminForm(request)
        guard let presented = form["csrf"], ConstantTime.equal(presented, session.csrf) else {
            logger.warning("admin form refused: no valid CSRF token", metadata: ["path": .string(request.path)])
            return AdminPage.message(
                status: 403,
                title: "Form refused",
                "This form did not carry the session's CSRF token, so nothing was changed: reload the page and send "
                    + "the form again."
            ).response(path: request.path)
        }
        guard session.role.mayChange else {
            return AdminPage.message(
                status: 403,
                title: "Read-only key",
                "This session signed in with a key of HERALD_ADMIN_READONLY_KEYS, which may only read: sign in with "
                    + "one of HERALD_API_KEYS to change things."
            ).response(path: request.path)
        }
        let outcome = try await perform(Context(session: session, request: request), form)
        switch outcome {
        case .redirect(let location, let notice):
            return Self.redirect(location, notice: notice)
        case .page(var page):
            page.session = session
            page.simulator = await simulatorPresent(request.requestID)
            return page.response(path: request.path)
        }
    }

    func signInRedirect(_ request: HTTPRequest) -> HTTPResponse {
        var next = request.path
        if !request.query.isEmpty {
            next +=
                "?"
                + request.query.map { "\(AdminForm.encode($0.name))=\(AdminForm.encode($0.value))" }
                .joined(separator: "&")
        }
        return Self.redirect("/admin/sign-in?next=" + AdminForm.encode(next))
    }

    static func redirect(_ location: String, notice: String? = nil, cookies: [String] = []) -> HTTPResponse {
        var target = location
        if let notice {
            target += (location.contains("?") ? "&" : "?") + "notice=" + AdminForm.encode(notice)
        }
        var headers = AdminPage.securityHeaders
        headers.add(name: "Location", value: target)
        for cookie in cookies { headers.add(name: "Set-Cookie", value: cookie) }
        return HTTPResponse(status: 303, headers: headers)
    }

    /// `name`'s value in the request's `Cookie` headers.
    static func cookie(_ name: String, in request: HTTPRequest) -> String? {
        for header in request.headers.values(for: "Cookie") {
            for part in header.split(separator: ";") {
                let pair = part.split(separator: "=", maxSplits: 1)
                guard pair.count == 2, pair[0].trimmingCharacters(in: .whitespaces) == name else { continue }
                return pair[1].trimmingCharacters(in: .whitespaces)
            }
        }
        return nil
    }

    /// A `Set-Cookie` value: `HttpOnly`, `SameSite=Strict`, on `/admin`, `Secure` unless
    /// `HERALD_ADMIN_INSECURE_COOKIE=1`; `maxAge` 0 deletes it.
    func setCookie(_ name: String, _ value: String, maxAge: Int) -> String {
        var cookie = "\(name)=\(value); Path=/admin; Max-Age=\(maxAge); HttpOnly; SameSite=Strict"
        if !settings.insecureCookie { cookie += "; Secure" }
        return cookie
    }
}

/// What a change leads to: another page (with a notice), or a page of its own (a test push's answer).
enum AdminOutcome: Sendable {
    case redirect(String, notice: String?)
    case page(AdminPage)
}

/// A value computed at most once per `lifetime` seconds: what the overview counts over a whole
/// table (the queue's jobs by status), so that its cost does not grow with every view.
final class CachedValue<Value: Sendable>: Sendable {
    private let lifetime: TimeInterval
    private let clock: any HeraldClock
    private let cached = Mutex<(value: Value, at: Date)?>(nil)

    init(lifetime: TimeInterval, clock: any HeraldClock) {
        self.lifetime = lifetime
        self.clock = clock
    }

    func value(_ compute: @Sendable () async throws -> Value) async throws -> Value {
        let now = clock.now()
        if let cached = cached.withLock({ $0 }), now.timeIntervalSince(cached.at) < lifetime {
            return cached.value
        }
        let value = try await compute()
        cached.withLock { $0 = (value, now) }
        return value
    }
}
