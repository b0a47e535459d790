/// A long-running part of Herald, in the shape of swift-service-lifecycle's `Service`.
///
/// `run()` does the work until it is finished, asked to stop gracefully, or cancelled. Graceful
/// shutdown means: stop taking new work, finish what is in flight within a bounded wait, return.
public protocol Service: Sendable {
    func run() async throws

    /// Asks a running `run()` to finish gracefully. Must be safe to call from any thread, at any
    /// time, more than once, and before `run()` has started (then `run()` returns promptly).
    ///
    /// There is deliberately no default: a no-op default is what a caller gets, silently, when
    /// the conforming type's own method is not visible from its module.
    func triggerGracefulShutdown()
}
