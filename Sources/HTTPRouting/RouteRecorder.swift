import HeraldCore
import Synchronization

/// Where ``Router`` notes the pattern it matched, so that middleware outside the router can
/// label metrics and logs with it even when the handler threw (and so no ``HTTPResponse/route``
/// reached them). Bound once per request, as a task-local, by ``MiddlewareChain``.
final class RouteRecorder: Sendable {
    @TaskLocal static var current: RouteRecorder?

    private let matched = Mutex<(pattern: String, loggedPath: LoggedPathRule?)?>(nil)

    /// The matched pattern, `nil` until a route matched.
    var route: String? { matched.withLock { $0?.pattern } }

    /// The matched route's ``Router/logPaths(of:as:)`` rule.
    var loggedPathRule: LoggedPathRule? { matched.withLock { $0?.loggedPath } }

    func record(_ route: String, loggedPath: LoggedPathRule?) {
        matched.withLock { $0 = (route, loggedPath) }
    }

    /// Runs `body` with a recorder bound, reusing one that is already bound.
    static func withRecorder<T: Sendable>(_ body: () async throws -> T) async rethrows -> T {
        if current != nil { return try await body() }
        return try await $current.withValue(RouteRecorder()) { try await body() }
    }

    /// The label to use for `response`: its route, the recorded one, or `unmatched`.
    static func label(for response: HTTPResponse?) -> String {
        response?.route ?? current?.route ?? "unmatched"
    }

    /// The path the access log shows for `request`: as `response` or its route says, or as the
    /// recorded route says when the handler threw and `response` was made outside the router.
    /// Whatever the route (an unmatched one too), device tokens, generated API keys and JWTs in
    /// it are shortened (``LogRedaction/path(_:)``).
    static func loggedPath(of request: HTTPRequest, answeredWith response: HTTPResponse?) -> String {
        if let loggedPath = response?.loggedPath { return LogRedaction.path(loggedPath) }
        guard let rule = response?.loggedPathRule ?? current?.loggedPathRule else {
            return LogRedaction.path(request.path)
        }
        return LogRedaction.path(rule.transform(request))
    }
}
