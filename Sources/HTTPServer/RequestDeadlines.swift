import CMicroHTTPD
import Foundation
import Glibc
import HTTPRouting
import HeraldCore
import Synchronization

/// The total deadline for receiving a request (``HTTPServer/Configuration/requestTimeout``):
/// from the moment a connection opens, or its previous response finished, until the request's
/// headers and body are all in. libmicrohttpd's own timeout only measures idleness, so a client
/// sending a byte a second would hold its connection slot forever.
///
/// Each connection gets a ``TrackedConnection`` when libmicrohttpd opens it
/// (`MHD_OPTION_NOTIFY_CONNECTION`); a sweeper thread shuts down the socket of every connection
/// past its deadline, and libmicrohttpd, reading end-of-stream, closes the connection itself
/// (and completes its request, if one began) on its own thread.
final class RequestDeadlines: Sendable {
    /// One open connection: its socket and when its request must be in (monotonic nanoseconds;
    /// 0 while a request is being answered, or once the sweeper shut it down).
    final class TrackedConnection: Sendable {
        let socket: Int32
        let deadline: Atomic<UInt64>

        init(socket: Int32, deadline: UInt64) {
            self.socket = socket
            self.deadline = Atomic(deadline)
        }
    }

    private let timeout: UInt64
    /// `herald_http_request_deadline_closes_total`.
    private let closes: Counter?
    /// Every open connection, for the sweeper; entries are added and removed in libmicrohttpd's
    /// connection callbacks only.
    private let open = Mutex<[ObjectIdentifier: TrackedConnection]>([:])
    /// Set by ``stop()``; the sweeper shuts nothing down once it is.
    private let stopped = Atomic<Bool>(false)
    private let closedCount = Atomic<Int>(0)

    /// - Parameters:
    ///   - timeout: positive.
    ///   - closes: counts the connections closed for missing their deadline.
    init(timeout: Duration, closes: Counter? = nil) {
        let (seconds, attoseconds) = timeout.components
        self.timeout = UInt64(max(0, seconds)) * 1_000_000_000 + UInt64(max(0, attoseconds) / 1_000_000_000)
        self.closes = closes
    }

    /// Connections closed for missing their deadline so far.
    var closedConnections: Int { closedCount.load(ordering: .relaxed) }

    static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    // MARK: libmicrohttpd callbacks (daemon threads)

    /// MHD_CONNECTION_NOTIFY_STARTED: tracks the connection, with a retain kept in its socket
    /// context until ``closed(_:)``.
    func started(_ connection: OpaquePointer, context: UnsafeMutablePointer<UnsafeMutableRawPointer?>) {
        let socket = herald_mhd_get_connection_info_fd(connection)
        guard socket >= 0 else { return }
        let tracked = TrackedConnection(socket: socket, deadline: Self.now() + timeout)
        open.withLock { $0[ObjectIdentifier(tracked)] = tracked }
        context.pointee = Unmanaged.passRetained(tracked).toOpaque()
    }

    /// MHD_CONNECTION_NOTIFY_CLOSED: libmicrohttpd calls it before closing the socket, so once the
    /// entry is gone (under the lock the sweeper holds while it shuts sockets down) the sweeper
    /// can no longer touch a descriptor that may be reused.
    func closed(context: UnsafeMutablePointer<UnsafeMutableRawPointer?>) {
        guard let raw = context.pointee else { return }
        context.pointee = nil
        let tracked = Unmanaged<TrackedConnection>.fromOpaque(raw).takeRetainedValue()
        _ = open.withLock { $0.removeValue(forKey: ObjectIdentifier(tracked)) }
    }

    /// The request is in and being answered: no deadline until its response is finished.
    func requestReceived(on connection: OpaquePointer) {
        Self.tracked(connection)?.deadline.store(0, ordering: .relaxed)
    }

    /// The response is finished: the next request on this connection must arrive whole within
    /// the timeout.
    func responseFinished(on connection: OpaquePointer) {
        Self.tracked(connection)?.deadline.store(Self.now() + timeout, ordering: .relaxed)
    }

    /// The connection's ``TrackedConnection``, borrowed from its socket context: valid for the
    /// duration of a libmicrohttpd callback on that connection, which happens before
    /// NOTIFY_CLOSED releases it.
    private static func tracked(_ connection: OpaquePointer) -> TrackedConnection? {
        guard let raw = herald_mhd_get_connection_info_socket_context(connection) else { return nil }
        return Unmanaged<TrackedConnection>.fromOpaque(raw).takeUnretainedValue()
    }

    // MARK: Sweeper

    /// Shuts down the socket of every connection past its deadline; returns how many.
    @discardableResult
    func sweep(now: UInt64 = RequestDeadlines.now()) -> Int {
        let closed = open.withLock { open -> Int in
            // Checked under the lock that NOTIFY_CLOSED takes: after stop(), no socket is touched.
            guard !stopped.load(ordering: .acquiring) else { return 0 }
            var closed = 0
            for tracked in open.values {
                let deadline = tracked.deadline.load(ordering: .relaxed)
                guard deadline != 0, deadline <= now else { continue }
                // Loses to a request that has just come in whole: it is answered instead.
                guard tracked.deadline.compareExchange(expected: deadline, desired: 0, ordering: .relaxed).exchanged
                else { continue }
                // The socket stays libmicrohttpd's to close: shutting it down makes its next read
                // see end-of-stream, and libmicrohttpd then closes the connection as usual.
                Glibc.shutdown(tracked.socket, Int32(SHUT_RDWR))
                closed += 1
            }
            return closed
        }
        if closed > 0 {
            closedCount.add(closed, ordering: .relaxed)
            closes?.increment(by: Double(closed))
        }
        return closed
    }

    /// Starts the sweeper thread, which runs until ``stop()``.
    func start() {
        // A tenth of the timeout, so connections close within about 10 % past their deadline.
        let interval = min(max(timeout / 10, 50_000_000), 1_000_000_000)
        let thread = Thread { [self] in
            ThreadName.setCurrent("herald-http-deadline")
            var pause = timespec(tv_sec: Int(interval / 1_000_000_000), tv_nsec: Int(interval % 1_000_000_000))
            while !stopped.load(ordering: .acquiring) {
                nanosleep(&pause, nil)
                sweep()
            }
        }
        thread.start()
    }

    /// Stops sweeping, without waiting: a sweep under way finishes on sockets libmicrohttpd
    /// still owns (each stays registered until its NOTIFY_CLOSED), and none starts after this.
    /// The thread ends within one interval.
    func stop() {
        stopped.store(true, ordering: .releasing)
    }
}
