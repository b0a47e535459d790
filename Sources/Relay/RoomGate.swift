import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Where HTTP threads pause, briefly, while too many relayed pushes wait for APNs.
///
/// A paused thread reads no new requests, so senders slow down through TCP, as they would
/// against a server that answers more slowly. That costs one wake-up for a batch of requests;
/// suspending each request and answering it from a task costs far more per request, and that
/// cost falls exactly when the machine is busiest. A pause is short (``maximumPause``): a request
/// still without room after it takes the asynchronous path. When nothing progressed during such a
/// pause (no push was answered: APNs is stalled), no thread pauses for ``holdOff``, so a stalled
/// connection cannot hold up the other requests of a thread (health checks, the other
/// environment) for more than one pause in a while. When pushes were answered but the room went
/// to requests already waiting in tasks, the next request pauses again: those waiters drain, and
/// the threads then take the room.
///
/// `@unchecked Sendable`: the pthread mutex and condition are used only through their
/// thread-safe functions; the other state is atomic.
final class RoomGate: @unchecked Sendable {
    /// Longest pause, in nanoseconds; 0 never pauses.
    let maximumPause: UInt64
    /// How long no thread pauses after a pause ended without room, in nanoseconds.
    let holdOff: UInt64

    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    /// Threads inside ``pause(until:)``; ``open()`` is one atomic load while there are none.
    private let sleepers = Atomic(0)
    /// A wake-up is on its way to the threads waiting now: ``open()`` need not send another.
    /// Each waiter clears it, under the mutex, before it checks for room and waits.
    private let wakeUpSent = Atomic(false)
    /// Monotonic nanoseconds before which ``pause(until:)`` does not wait.
    private let holdOffUntil = Atomic<UInt64>(0)

    init(maximumPause: Duration, holdOff: Duration) {
        func nanoseconds(_ duration: Duration) -> UInt64 {
            let (seconds, attoseconds) = duration.components
            guard seconds >= 0, attoseconds >= 0 else { return 0 }
            return UInt64(seconds) &* 1_000_000_000 &+ UInt64(attoseconds / 1_000_000_000)
        }
        self.maximumPause = nanoseconds(maximumPause)
        self.holdOff = nanoseconds(holdOff)
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        // Deadlines on the monotonic clock: a change of the wall clock neither ends a pause early
        // nor makes it last.
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        condition.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// How a call of ``pause(until:progress:)`` ended.
    enum Outcome: Equatable {
        /// There was room: at once, or after a pause.
        case room(paused: Bool)
        /// The pause reached ``maximumPause`` without room.
        case timedOut
        /// No room, and no pause: within ``holdOff``, or pauses are off.
        case heldOff

        var hasRoom: Bool {
            if case .room = self { return true }
            return false
        }
    }

    /// Waits until `hasRoom()` holds, at most ``maximumPause``. Within ``holdOff`` after a pause
    /// that ended without room and without `progress()` changing, answers at once.
    ///
    /// `hasRoom` must read atomics that are changed (sequentially consistent) before ``open()``
    /// is called, so that no wake-up is lost.
    func pause(until hasRoom: () -> Bool, progress: () -> Int) -> Outcome {
        if hasRoom() { return .room(paused: false) }
        let start = Self.now()
        guard maximumPause > 0, start >= holdOffUntil.load(ordering: .relaxed) else { return .heldOff }
        let deadline = start &+ maximumPause
        var timeout = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        let progressBefore = progress()
        pthread_mutex_lock(mutex)
        sleepers.wrappingAdd(1, ordering: .sequentiallyConsistent)
        var result = false
        while true {
            wakeUpSent.store(false, ordering: .sequentiallyConsistent)
            result = hasRoom()
            if result || pthread_cond_timedwait(condition, mutex, &timeout) == ETIMEDOUT { break }
        }
        if !result { result = hasRoom() }
        sleepers.wrappingSubtract(1, ordering: .sequentiallyConsistent)
        pthread_mutex_unlock(mutex)
        if result { return .room(paused: true) }
        if progress() == progressBefore { holdOffUntil.store(Self.now() &+ holdOff, ordering: .relaxed) }
        return .timedOut
    }

    /// Wakes paused threads to check for room again. Call after changing what `hasRoom` reads;
    /// with no thread paused it costs one atomic load.
    func open() {
        guard sleepers.load(ordering: .sequentiallyConsistent) > 0,
            !wakeUpSent.exchange(true, ordering: .sequentiallyConsistent)
        else { return }
        pthread_mutex_lock(mutex)
        pthread_cond_broadcast(condition)
        pthread_mutex_unlock(mutex)
    }

    /// CLOCK_MONOTONIC in nanoseconds, the clock of the condition's deadlines.
    private static func now() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
    }
}
