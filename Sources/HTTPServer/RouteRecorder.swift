import Synchronization

/// Where ``Router`` notes the pattern it matched, so that middleware outside the router can
/// label metrics and logs with it even when the handler threw (and so no ``HTTPResponse/route``
/// reached them). Bound once per request, as a task-local, by ``MiddlewareChain``.
final class RouteRecorder: Sendable {
    @TaskLocal static var current: RouteRecorder?

    private let pattern = Mutex<String?>(nil)

    /// The matched pattern, `nil` until a route matched.
    var route: String? { pattern.withLock { $0 } }

    func record(_ route: String) {
        pattern.withLock { $0 = route }
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
}
