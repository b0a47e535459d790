import Dispatch
import Synchronization

#if canImport(Glibc)
    public import Glibc
#endif

/// Runs services together and shuts them down in order, in the shape of swift-service-lifecycle's
/// `ServiceGroup`.
///
/// - The first SIGINT/SIGTERM (or any service returning or failing) triggers graceful shutdown of
///   every service; each is expected to finish in-flight work and return.
/// - Services still running after `gracePeriod`, or when a second signal arrives, are cancelled.
/// - `run()` rethrows the first error a service threw before shutdown began.
public struct ServiceGroup: Sendable {
    public var services: [any Service]
    public var signals: [Int32]
    public var gracePeriod: Duration
    public var logger: Logger

    public init(
        services: [any Service],
        signals: [Int32] = [SIGINT, SIGTERM],
        gracePeriod: Duration = .seconds(10),
        logger: Logger
    ) {
        self.services = services
        self.signals = signals
        self.gracePeriod = gracePeriod
        self.logger = logger
    }

    private enum Event: Sendable {
        case signal(Int32)
        case serviceFinished(index: Int, error: (any Error)?)
        case gracePeriodOver
    }

    public func run() async throws {
        let signalStream = UnixSignals.stream(for: signals)
        try await withThrowingTaskGroup(of: Event.self) { group in
            for (index, service) in services.enumerated() {
                group.addTask {
                    do {
                        try await service.run()
                        return .serviceFinished(index: index, error: nil)
                    } catch {
                        return .serviceFinished(index: index, error: error)
                    }
                }
            }
            group.addTask {
                for await signal in signalStream { return .signal(signal) }
                try await Task.sleep(for: .seconds(86_400 * 365 * 100))
                return .gracePeriodOver
            }

            var running = services.count
            var shuttingDown = false
            var firstError: (any Error)?
            func beginShutdown(reason: String) {
                guard !shuttingDown else { return }
                shuttingDown = true
                logger.notice("shutting down gracefully", metadata: ["reason": .string(reason)])
                for service in services { service.triggerGracefulShutdown() }
                let grace = gracePeriod
                group.addTask {
                    try await Task.sleep(for: grace)
                    return .gracePeriodOver
                }
                group.addTask {
                    for await signal in signalStream { return .signal(signal) }
                    return .gracePeriodOver
                }
            }

            while running > 0, let event = try await group.next() {
                switch event {
                case .signal(let number):
                    if shuttingDown {
                        logger.warning("second signal: cancelling services", metadata: ["signal": .int(Int(number))])
                        group.cancelAll()
                    } else {
                        beginShutdown(reason: "signal \(UnixSignals.name(number))")
                    }
                case .serviceFinished(let index, let error):
                    running -= 1
                    if let error, !shuttingDown, firstError == nil {
                        logger.error(
                            "service failed",
                            metadata: [
                                "service": .string(String(describing: type(of: services[index]))),
                                "error": .string(String(describing: error)),
                            ]
                        )
                        firstError = error
                    }
                    beginShutdown(reason: "a service finished")
                case .gracePeriodOver:
                    if shuttingDown, running > 0 {
                        logger.warning("grace period over: cancelling services", metadata: ["running": .int(running)])
                        group.cancelAll()
                    }
                }
            }
            group.cancelAll()
            if let firstError { throw firstError }
        }
    }
}

/// Unix signals as an `AsyncStream`, delivered through Dispatch signal sources.
public enum UnixSignals {
    /// A stream yielding each of `signals` as it arrives. The default disposition of those
    /// signals is replaced for the life of the process.
    public static func stream(for signals: [Int32]) -> AsyncStream<Int32> {
        let (stream, continuation) = AsyncStream<Int32>.makeStream()
        let sources = signals.map { number -> any DispatchSourceSignal in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { continuation.yield(number) }
            source.resume()
            return source
        }
        let holder = SourceHolder(sources)
        continuation.onTermination = { _ in holder.cancel() }
        return stream
    }

    public static func name(_ number: Int32) -> String {
        switch number {
        case SIGINT: "SIGINT"
        case SIGTERM: "SIGTERM"
        case SIGHUP: "SIGHUP"
        default: String(number)
        }
    }

    /// Keeps the dispatch sources alive while the stream is; cancelled once when it ends.
    private final class SourceHolder: Sendable {
        private let sources: Mutex<[any DispatchSourceSignal]>
        init(_ sources: sending [any DispatchSourceSignal]) { self.sources = Mutex(sources) }
        func cancel() {
            let all = sources.withLock { sources in
                defer { sources = [] }
                return sources
            }
            for source in all { source.cancel() }
        }
    }
}
