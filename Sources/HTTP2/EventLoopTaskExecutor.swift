public import HeraldIO

/// Runs tasks on an ``HeraldIO/EventLoop``'s thread: a `TaskExecutor` for senders that want their
/// requests built on the same thread that drives their connections.
///
/// A task that prefers this executor (`withTaskExecutorPreference`, inherited by its child tasks)
/// runs between the loop's I/O events. A response then resumes its task on the loop without waking
/// another thread, and the next request the task submits is written in the same loop iteration as
/// the others of the batch — the way a single-threaded client such as h2load works, without the
/// hand-over to the cooperative pool and back for every request.
///
/// ```swift
/// let executor = EventLoopTaskExecutor(eventLoop: .shared)
/// await withTaskExecutorPreference(executor) {
///     await withTaskGroup(of: Void.self) { group in
///         for request in requests { group.addTask { _ = try? await client.send(request) } }
///     }
/// }
/// ```
///
/// Work that runs long or blocks must not use it: it would delay every connection of the loop.
/// Herald's servers keep their default executors; `herald bench --executor loop` uses this one.
public final class EventLoopTaskExecutor: TaskExecutor {
    public let eventLoop: EventLoop

    public init(eventLoop: EventLoop = .shared) {
        self.eventLoop = eventLoop
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        eventLoop.execute { job.runSynchronously(on: executor) }
    }
}
