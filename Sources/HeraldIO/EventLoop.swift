import CHeraldShims
import Foundation
import Glibc
import HeraldCore
import Synchronization

/// One reactor thread: an epoll instance, an eventfd to wake it, a task queue and timers.
///
/// Everything that touches a socket, an `SSL` object or an nghttp2 session runs on the loop's
/// thread, so those objects need no locks. Other threads hand work over with ``execute(_:)``:
/// tasks go into a lock-protected queue and the loop is woken through its eventfd at most once per
/// batch, so many submissions cost one wake-up.
///
/// ```swift
/// let loop = EventLoop.shared
/// loop.execute { /* runs on the loop thread */ }
/// ```
///
/// `@unchecked Sendable`: the task queue is behind a `Mutex` and the thread identity is an
/// `Atomic`; every other stored property (registrations, timers, the event buffer) is read and
/// written only on the loop's own thread, which the methods that touch them check with
/// ``assertInEventLoop()``.
public final class EventLoop: @unchecked Sendable {
    /// The process-wide loop Herald's connections use unless told otherwise. It is never shut down.
    public static let shared = EventLoop(name: "herald-io")

    /// The loop's name; its thread has the same name.
    public let name: String

    private let epollFD: Int32
    private let wakeFD: Int32
    private let threadID = Atomic<UInt>(0)
    private let inbox = Mutex(Inbox())

    // Loop-thread state.
    private var registrations: [Int32: Registration] = [:]
    private var nextGeneration: UInt32 = 1
    private var timers = TimerHeap()
    private var running = true
    private var currentTasks: [@Sendable () -> Void] = []
    private var cachedNow: UInt64 = 0
    /// `Inbox.mayBeSleeping` was set for the coming `epoll_wait`.
    private var sleepArmed = false

    private struct Inbox {
        var tasks: [@Sendable () -> Void] = []
        /// The loop found no tasks and may be blocked in `epoll_wait`: a new task must signal the
        /// eventfd. While the loop is awake it checks the inbox before sleeping again, so tasks
        /// queued then need no syscall.
        var mayBeSleeping = false
        var wakePending = false
        var stopped = false
    }

    private struct Registration {
        var generation: UInt32
        var interest: IOInterest
        var handler: any IOEventHandler
    }

    /// Starts a loop with its own thread.
    /// - Parameter name: names the thread, for debuggers and `top -H`.
    public init(name: String) {
        self.name = name
        let epollFD = cherald_epoll_create()
        let wakeFD = cherald_eventfd_create()
        precondition(epollFD >= 0 && wakeFD >= 0, "cannot create epoll/eventfd: errno \(errno)")
        self.epollFD = epollFD
        self.wakeFD = wakeFD
        let added = cherald_epoll_ctl(epollFD, Int32(CHERALD_EPOLL_CTL_ADD), wakeFD, UInt32(CHERALD_EPOLLIN), 0)
        precondition(added == 0, "cannot watch the eventfd: errno \(errno)")
        let thread = Thread { [self] in
            ThreadName.setCurrent(name)
            self.threadMain()
        }
        thread.start()
    }

    /// True when called on this loop's thread.
    public var inEventLoop: Bool {
        let id = threadID.load(ordering: .acquiring)
        return id != 0 && id == UInt(pthread_self())
    }

    /// Traps in debug builds when not called on the loop's thread.
    @inline(__always)
    public func assertInEventLoop(file: StaticString = #fileID, line: UInt = #line) {
        assert(inEventLoop, "must be called on event loop \(name)", file: file, line: line)
    }

    /// Runs `task` on the loop thread, after the I/O events of the current iteration. Tasks run in
    /// the order they were submitted. Safe to call from any thread, including the loop's own.
    /// Once the loop has stopped (``shutdown()``), `task` is dropped: there is no thread left to
    /// run it.
    public func execute(_ task: @escaping @Sendable () -> Void) {
        let fromLoop = inEventLoop
        let wake = inbox.withLock { inbox -> Bool in
            if inbox.stopped { return false }
            inbox.tasks.append(task)
            if fromLoop || !inbox.mayBeSleeping || inbox.wakePending { return false }
            inbox.wakePending = true
            return true
        }
        if wake { _ = cherald_eventfd_signal(wakeFD) }
    }

    /// Stops the loop after the tasks already queued; its thread exits. Do not stop ``shared``.
    public func shutdown() {
        execute { [self] in self.running = false }
    }

    /// True once the loop has stopped: its thread is exiting or gone, and ``execute(_:)`` drops
    /// what it is given.
    public var isStopped: Bool { inbox.withLock { $0.stopped } }

    // MARK: time

    /// Monotonic time in nanoseconds (CLOCK_MONOTONIC).
    public static func monotonicNanoseconds() -> UInt64 {
        cherald_monotonic_nanoseconds()
    }

    /// Monotonic time in nanoseconds as of the start of the current loop iteration: cheap to read.
    /// Loop thread only.
    public var iterationTime: UInt64 {
        assertInEventLoop()
        return cachedNow
    }

    // MARK: timers

    /// Runs `body` on the loop thread once `delay` has passed, unless cancelled first. Loop thread
    /// only.
    /// - Returns: a handle for ``cancelTimer(_:)``.
    @discardableResult
    public func scheduleTimer(after delay: Duration, _ body: @escaping () -> Void) -> TimerHandle {
        scheduleTimer(at: Self.monotonicNanoseconds() &+ delay.nanoseconds, body)
    }

    /// Runs `body` on the loop thread at the monotonic time `deadline` (nanoseconds, see
    /// ``monotonicNanoseconds()``), unless cancelled first. Loop thread only.
    @discardableResult
    public func scheduleTimer(at deadline: UInt64, _ body: @escaping () -> Void) -> TimerHandle {
        assertInEventLoop()
        return timers.schedule(at: deadline, body)
    }

    /// Cancels a timer that has not fired; does nothing otherwise. Loop thread only.
    public func cancelTimer(_ handle: TimerHandle) {
        assertInEventLoop()
        timers.cancel(handle)
    }

    // MARK: registrations (module-internal)

    /// Watches `fd` for `interest`, calling `handler` on readiness. Loop thread only.
    func register(fd: Int32, interest: IOInterest, handler: any IOEventHandler) throws(IOError) {
        assertInEventLoop()
        let generation = nextGeneration
        nextGeneration &+= 1
        if nextGeneration == 0 { nextGeneration = 1 }
        let data = UInt64(generation) << 32 | UInt64(UInt32(bitPattern: fd))
        guard cherald_epoll_ctl(epollFD, Int32(CHERALD_EPOLL_CTL_ADD), fd, interest.epollEvents, data) == 0 else {
            throw IOError(operation: "epoll_ctl(ADD)", errno: errno)
        }
        registrations[fd] = Registration(generation: generation, interest: interest, handler: handler)
    }

    /// Changes what `fd` is watched for. Loop thread only.
    func reregister(fd: Int32, interest: IOInterest) throws(IOError) {
        assertInEventLoop()
        guard var registration = registrations[fd] else { return }
        guard registration.interest != interest else { return }
        let data = UInt64(registration.generation) << 32 | UInt64(UInt32(bitPattern: fd))
        guard cherald_epoll_ctl(epollFD, Int32(CHERALD_EPOLL_CTL_MOD), fd, interest.epollEvents, data) == 0 else {
            throw IOError(operation: "epoll_ctl(MOD)", errno: errno)
        }
        registration.interest = interest
        registrations[fd] = registration
    }

    /// Stops watching `fd`. Call before closing it. Loop thread only.
    func deregister(fd: Int32) {
        assertInEventLoop()
        guard registrations.removeValue(forKey: fd) != nil else { return }
        _ = cherald_epoll_ctl(epollFD, Int32(CHERALD_EPOLL_CTL_DEL), fd, 0, 0)
    }

    // MARK: the loop

    private func threadMain() {
        threadID.store(UInt(pthread_self()), ordering: .releasing)
        _ = cherald_block_sigpipe_in_thread()
        let capacity = 256
        let events = UnsafeMutablePointer<cherald_epoll_event>.allocate(capacity: capacity)
        defer { events.deallocate() }
        cachedNow = Self.monotonicNanoseconds()

        while running {
            let timeout = pollTimeout()
            let count = cherald_epoll_wait(epollFD, events, Int32(capacity), timeout)
            if sleepArmed {
                sleepArmed = false
                inbox.withLock { inbox in
                    inbox.mayBeSleeping = false
                    inbox.wakePending = false
                }
            }
            cachedNow = Self.monotonicNanoseconds()
            if count > 0 {
                for index in 0..<Int(count) {
                    let event = events[index]
                    if event.data == 0 {
                        _ = cherald_eventfd_drain(wakeFD)
                        continue
                    }
                    let fd = Int32(bitPattern: UInt32(truncatingIfNeeded: event.data))
                    let generation = UInt32(truncatingIfNeeded: event.data >> 32)
                    guard let registration = registrations[fd], registration.generation == generation else {
                        continue
                    }
                    registration.handler.ioReady(IOReadiness(epollEvents: event.events))
                }
            }
            runDueTimers()
            runTasks()
        }
        // Timers that never fired are dropped: their bodies usually capture the handler that
        // scheduled them, which holds the loop, and would keep both alive after the loop stops.
        timers.removeAll()
        // Tasks queued after the last turn are dropped, and released outside the lock: a task's
        // captures may call `execute` as they go.
        let dropped = inbox.withLock { inbox in
            inbox.stopped = true
            defer { inbox.tasks = [] }
            return inbox.tasks
        }
        _ = consume dropped
        for (fd, registration) in registrations {
            _ = cherald_epoll_ctl(epollFD, Int32(CHERALD_EPOLL_CTL_DEL), fd, 0, 0)
            registration.handler.loopShutdown()
        }
        registrations = [:]
        // The epoll and eventfd descriptors stay open until `deinit`: a thread inside
        // `execute` may still be about to signal the eventfd, and once closed its number could
        // already belong to another file, which would then receive those 8 bytes.
    }

    deinit {
        close(epollFD)
        close(wakeFD)
    }

    /// Milliseconds to wait in epoll: 0 when tasks are queued, until the next timer otherwise
    /// (and then tasks queued from now on signal the eventfd).
    private func pollTimeout() -> Int32 {
        let hasTasks = inbox.withLock { inbox -> Bool in
            if !inbox.tasks.isEmpty { return true }
            inbox.mayBeSleeping = true
            return false
        }
        if hasTasks { return 0 }
        sleepArmed = true
        guard let next = timers.nextDeadline else { return -1 }
        let now = Self.monotonicNanoseconds()
        if next <= now { return 0 }
        let milliseconds = (next - now + 999_999) / 1_000_000
        return Int32(min(milliseconds, UInt64(Int32.max)))
    }

    private func runDueTimers() {
        guard timers.nextDeadline != nil else { return }
        let now = Self.monotonicNanoseconds()
        while let body = timers.popDue(now: now) {
            body()
        }
    }

    private func runTasks() {
        inbox.withLock { inbox in
            swap(&inbox.tasks, &currentTasks)
        }
        for task in currentTasks {
            task()
        }
        currentTasks.removeAll(keepingCapacity: currentTasks.count < 4096)
    }
}

/// Identifies a scheduled timer of an ``EventLoop``.
public struct TimerHandle: Hashable, Sendable {
    let id: UInt64
}

/// What a registered file descriptor is watched for.
struct IOInterest: Equatable {
    var read: Bool
    var write: Bool

    var epollEvents: UInt32 {
        var events = UInt32(CHERALD_EPOLLRDHUP)
        if read { events |= UInt32(CHERALD_EPOLLIN) }
        if write { events |= UInt32(CHERALD_EPOLLOUT) }
        return events
    }
}

/// What epoll reported for a file descriptor.
struct IOReadiness {
    var readable: Bool
    var writable: Bool
    var hangup: Bool
    var error: Bool

    init(epollEvents events: UInt32) {
        readable = events & UInt32(CHERALD_EPOLLIN) != 0
        writable = events & UInt32(CHERALD_EPOLLOUT) != 0
        hangup = events & UInt32(CHERALD_EPOLLHUP | CHERALD_EPOLLRDHUP) != 0
        error = events & UInt32(CHERALD_EPOLLERR) != 0
    }
}

/// Something registered with an ``EventLoop``: a channel or a listener.
protocol IOEventHandler: AnyObject {
    /// Called on the loop thread when the file descriptor is ready.
    func ioReady(_ readiness: IOReadiness)
    /// Called on the loop thread when the loop stops while the descriptor is still registered.
    func loopShutdown()
}

extension Duration {
    /// The duration in whole nanoseconds, clamped to zero and to `UInt64.max` (for deadlines on
    /// ``EventLoop/monotonicNanoseconds()``).
    public var nanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        if seconds < 0 { return 0 }
        let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return .max }
        return whole &+ UInt64(attoseconds / 1_000_000_000)
    }
}
