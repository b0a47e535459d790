import Synchronization

/// The job queue of a domain type that registers handlers on that same queue: the queue is made
/// after the handlers (it needs them), so the type gets it afterwards, through ``attach(_:)``.
///
/// Held weakly: the queue holds the handlers and the handlers hold the type, so a strong
/// reference back would be a cycle that outlives the queue's owner (the worker, `herald serve`).
/// Once the owner has let the queue go, ``queue`` is `nil` again, exactly as before attaching.
public final class AttachedJobQueue: Sendable {
    private struct Reference {
        weak var queue: JobQueue?
    }

    private let reference = Mutex(Reference())

    public init() {}

    /// Attaches `queue`; a later call replaces it.
    public func attach(_ queue: JobQueue) {
        reference.withLock { $0.queue = queue }
    }

    /// The attached queue, or `nil` before ``attach(_:)`` and after the queue is released.
    public var queue: JobQueue? {
        reference.withLock { $0.queue }
    }
}
