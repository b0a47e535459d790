public import HeraldIO
import Synchronization

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
    /// Jobs waiting for the loop, and whether a run of them is already scheduled there: a burst
    /// of resumed tasks costs one loop task, not one closure each.
    private let queue = Mutex(Queue())

    private struct Queue: ~Copyable {
        var jobs: [UnownedJob] = []
        var scheduled = false
    }

    public init(eventLoop: EventLoop = .shared) {
        self.eventLoop = eventLoop
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let schedule = queue.withLock { queue -> Bool in
            queue.jobs.append(job)
            if queue.scheduled { return false }
            queue.scheduled = true
            return true
        }
        if schedule { eventLoop.execute { [self] in runJobs() } }
    }

    /// Loop thread: runs the jobs queued so far (jobs they enqueue run in the next batch).
    private func runJobs() {
        let jobs = queue.withLock { queue -> [UnownedJob] in
            queue.scheduled = false
            var jobs: [UnownedJob] = []
            swap(&jobs, &queue.jobs)
            return jobs
        }
        let executor = asUnownedTaskExecutor()
        for job in jobs { job.runSynchronously(on: executor) }
    }
}
