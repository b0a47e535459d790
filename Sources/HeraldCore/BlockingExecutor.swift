import Foundation

/// A small pool of dedicated threads for blocking C calls (`sqlite3_step`, libpq, `getaddrinfo`,
/// file reads), so that they never occupy a thread of Swift's cooperative pool.
///
/// Work is queued in FIFO order; each item runs to completion on one of the executor's threads and
/// its result resumes the awaiting task through a continuation. With `threadCount: 1` the executor
/// also serialises everything submitted to it, which is how a database connection that must be
/// used by one thread at a time keeps that promise.
///
/// ```swift
/// let executor = BlockingExecutor(name: "herald-dns", threadCount: 2)
/// let addresses = try await executor.run { try resolve(host) }
/// executor.shutdown()
/// ```
///
/// Cancelling the awaiting task does not interrupt a body that has started: a blocking C call
/// cannot be interrupted safely. Bodies should therefore be bounded (timeouts in the C library).
public final class BlockingExecutor: Sendable {
    private let core: Core

    /// The name given at creation; threads are called `name-0`, `name-1`, ….
    public let name: String

    /// Starts `threadCount` threads (at least one) that wait for work.
    public init(name: String, threadCount: Int) {
        self.name = name
        let count = max(1, threadCount)
        self.core = Core(threadCount: count)
        for index in 0..<count {
            let core = self.core
            let threadName = "\(name)-\(index)"
            let thread = Thread {
                ThreadName.setCurrent(threadName)
                core.workLoop()
            }
            thread.start()
        }
    }

    deinit {
        core.shutdown()
    }

    /// Runs `body` on one of the executor's threads and returns its result or rethrows its error.
    ///
    /// - Throws: ``BlockingExecutorError`` when the executor has been shut down before `body` was
    ///   accepted; otherwise whatever `body` throws.
    public func run<T: Sendable>(_ body: @Sendable @escaping () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let accepted = core.enqueue {
                continuation.resume(with: Result { try body() })
            }
            if !accepted {
                continuation.resume(throwing: BlockingExecutorError.shutDown(name: name))
            }
        }
    }

    /// Stops accepting work. Work already queued still runs; then the threads exit. Safe to call
    /// more than once and from any thread; does not wait.
    public func shutdown() {
        core.shutdown()
    }

    /// Stops accepting work and waits until every thread has finished the queued work and exited.
    public func shutdownGracefully() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            core.shutdown(whenStopped: { continuation.resume() })
        }
    }

    /// Work items queued but not yet started; for tests and metrics.
    public var pendingCount: Int {
        core.pendingCount
    }
}

/// Why ``BlockingExecutor/run(_:)`` refused work.
public struct BlockingExecutorError: Error, Sendable, CustomStringConvertible {
    private enum Code: Sendable { case shutDown }

    private let code: Code
    /// The executor's name.
    public let executorName: String

    static func shutDown(name: String) -> Self { Self(code: .shutDown, executorName: name) }

    /// True when the executor had been shut down.
    public var isShutDown: Bool { code == .shutDown }

    public var description: String {
        switch code {
        case .shutDown: "blocking executor '\(executorName)' has been shut down and accepts no more work"
        }
    }
}

extension BlockingExecutor {
    /// The queue and the threads' shared state, guarded by one condition lock.
    ///
    /// `@unchecked Sendable`: every stored property is read and written only while `condition` is
    /// locked (`NSCondition` is itself thread-safe), so instances may be shared between threads.
    fileprivate final class Core: @unchecked Sendable {
        typealias Work = @Sendable () -> Void

        private let condition = NSCondition()
        private var queue: [Work?] = []
        private var head = 0
        private var isShuttingDown = false
        private var runningThreads: Int
        private var stoppedCallbacks: [@Sendable () -> Void] = []

        init(threadCount: Int) {
            self.runningThreads = threadCount
        }

        var pendingCount: Int {
            condition.lock()
            defer { condition.unlock() }
            return queue.count - head
        }

        /// Queues `work`; false when shutting down.
        func enqueue(_ work: @escaping Work) -> Bool {
            condition.lock()
            defer { condition.unlock() }
            guard !isShuttingDown else { return false }
            queue.append(work)
            condition.signal()
            return true
        }

        func shutdown(whenStopped callback: (@Sendable () -> Void)? = nil) {
            condition.lock()
            isShuttingDown = true
            var runNow = false
            if let callback {
                if runningThreads == 0 { runNow = true } else { stoppedCallbacks.append(callback) }
            }
            condition.broadcast()
            condition.unlock()
            if runNow { callback?() }
        }

        /// The body of every thread: take work until shut down and drained.
        func workLoop() {
            while let work = next() {
                work()
            }
            condition.lock()
            runningThreads -= 1
            let callbacks = runningThreads == 0 ? stoppedCallbacks : []
            if runningThreads == 0 { stoppedCallbacks = [] }
            condition.unlock()
            for callback in callbacks { callback() }
        }

        private func next() -> Work? {
            condition.lock()
            defer { condition.unlock() }
            while head == queue.count {
                if isShuttingDown { return nil }
                condition.wait()
            }
            // The slot is emptied as the work is taken: a finished item's captures (continuations,
            // connections, buffers) must not outlive it until the queue happens to be compacted.
            let work = queue[head].take()
            head += 1
            if head == queue.count {
                queue.removeAll(keepingCapacity: queue.count <= 1024)
                head = 0
            } else if head >= 64, head * 2 >= queue.count {
                queue.removeFirst(head)
                head = 0
            }
            return work
        }
    }
}
