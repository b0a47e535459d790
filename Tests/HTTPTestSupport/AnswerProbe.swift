public import HTTPRouting
import Synchronization

/// Runs a handler as the server does, on the calling thread with a sink, and keeps its answer:
/// the one given before the call returned (``atOnce``), and the one given at all (``answer()``).
/// Tasks the handler starts run as tasks of their own.
public final class AnswerProbe: Sendable {
    /// The answer given before the call returned; `nil` when the handler answers later.
    public let atOnce: HTTPResponse?
    /// How many tasks the handler started before its call returned.
    public let tasksStarted: Int
    private let answers: AsyncStream<HTTPResult>

    public init(_ call: (HTTPResponseSink) -> Void) {
        let (answers, continuation) = AsyncStream.makeStream(of: HTTPResult.self)
        let seen = Seen()
        call(
            HTTPResponseSink(spawn: { work in
                seen.state.withLock { $0.tasks += 1 }
                // The server's I/O thread has no task to lend either: a handler's work runs as a
                // task of its own there too, and the probe awaits only the answer it delivers.
                Task { await work() }
            }) { result in
                seen.state.withLock { if $0.answer == nil { $0.answer = result } }
                continuation.yield(result)
                continuation.finish()
            }
        )
        (atOnce, tasksStarted) = seen.state.withLock { (try? $0.answer?.get(), $0.tasks) }
        self.answers = answers
    }

    /// `responder`'s handling of `request`.
    public convenience init(_ responder: some HTTPResponder, _ request: HTTPRequest) {
        self.init { responder.respond(to: request, answer: $0) }
    }

    /// The answer, once it comes (`nil`: the handler dropped the sink without answering).
    public func answer() async -> HTTPResult? {
        for await result in answers { return result }
        return nil
    }

    private final class Seen: Sendable {
        let state = Mutex<(answer: HTTPResult?, tasks: Int)>((nil, 0))
    }
}
