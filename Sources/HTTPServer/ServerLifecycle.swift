/// The life of one ``HTTPServer``, as a value the server keeps behind a `Mutex`. Each transition
/// returns what to do once the lock is released (resume waiters, yield an event).
struct ServerLifecycle {
    enum Phase {
        case idle
        case running(AsyncStream<ServerEvent>.Continuation)
        case finished
    }

    private(set) var phase = Phase.idle
    private var shutdownRequested = false
    private var port: Int?
    private var waiters: [UInt64: CheckedContinuation<Int, any Error>] = [:]
    private var cancelledWaiters: Set<UInt64> = []
    private var nextWaiterID: UInt64 = 0

    enum StartAction {
        case start
        /// Shutdown was requested before `run()`: return at once, failing these waiters.
        case finishEarly([CheckedContinuation<Int, any Error>])
        case alreadyStarted
    }

    mutating func start(_ continuation: AsyncStream<ServerEvent>.Continuation) -> StartAction {
        guard case .idle = phase else { return .alreadyStarted }
        if shutdownRequested {
            phase = .finished
            return .finishEarly(takeWaiters())
        }
        phase = .running(continuation)
        return .start
    }

    /// The daemon is bound: these waiters get `port`.
    mutating func bound(port: Int) -> [CheckedContinuation<Int, any Error>] {
        self.port = port
        return takeWaiters()
    }

    /// `run()` is returning: these waiters (if the server never bound) get an error.
    mutating func finish() -> [CheckedContinuation<Int, any Error>] {
        phase = .finished
        return takeWaiters()
    }

    /// Where to send the shutdown event, if the server is running.
    mutating func requestShutdown() -> AsyncStream<ServerEvent>.Continuation? {
        shutdownRequested = true
        guard case .running(let continuation) = phase else { return nil }
        return continuation
    }

    mutating func makeWaiterID() -> UInt64 {
        nextWaiterID += 1
        return nextWaiterID
    }

    enum WaitAction {
        case resume(Int)
        case fail(any Error)
        case wait
    }

    mutating func addWaiter(_ id: UInt64, _ continuation: CheckedContinuation<Int, any Error>) -> WaitAction {
        if let port { return .resume(port) }
        if cancelledWaiters.remove(id) != nil { return .fail(CancellationError()) }
        if case .finished = phase { return .fail(HTTPServerError.notListening) }
        waiters[id] = continuation
        return .wait
    }

    mutating func cancelWaiter(_ id: UInt64) -> CheckedContinuation<Int, any Error>? {
        if let continuation = waiters.removeValue(forKey: id) { return continuation }
        cancelledWaiters.insert(id)
        return nil
    }

    private mutating func takeWaiters() -> [CheckedContinuation<Int, any Error>] {
        defer {
            waiters = [:]
            cancelledWaiters = []
        }
        return Array(waiters.values)
    }
}
