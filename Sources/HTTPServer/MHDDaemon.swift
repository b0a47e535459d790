import CMicroHTTPD
import Foundation
import Glibc
import HTTPRouting
import HeraldCore
import Synchronization

/// Owns one running `MHD_Daemon`: starts it, stops accepting, stops it, and frees it in
/// `deinit` if ``stop()`` was never called. The daemon pointer never leaves this class.
///
/// `@unchecked Sendable` is safe: the pointer is only passed to libmicrohttpd's daemon-level
/// calls meant for the application's threads (`MHD_get_daemon_info`, `MHD_quiesce_daemon`,
/// `MHD_stop_daemon`), and `state` makes them happen in order — quiesce at most once and never
/// after stop, stop exactly once. The callbacks reach only ``HTTPServerCore``, held here so that it
/// outlives the daemon.
final class MHDDaemon: @unchecked Sendable {
    private struct State {
        var stopped = false
        /// The listening socket handed back by `MHD_quiesce_daemon`; ours to close after stop.
        var quiescedSocket: Int32?
    }

    private let daemon: OpaquePointer
    private let core: HTTPServerCore
    /// Its sweeper thread runs while the daemon does.
    private let deadlines: RequestDeadlines?
    private let state = Mutex(State())

    /// The port the daemon listens on (the real one when 0 was asked for).
    let port: Int

    /// Starts libmicrohttpd with internal `poll` threads and suspend/resume enabled.
    ///
    /// `poll`, not epoll: with epoll (libmicrohttpd 0.9.75, edge-triggered, a thread pool), a burst
    /// of new connections could leave them all accepted with their requests unread and every
    /// thread asleep; `poll` reports unread data until it is read (docs/PERFORMANCE.md).
    ///
    /// - Throws: ``HTTPServerError`` when the configuration is unusable or the daemon does not
    ///   start (address in use, no permission, …).
    init(configuration: HTTPServer.Configuration, core: HTTPServerCore) throws {
        guard (0...65_535).contains(configuration.port) else {
            throw HTTPServerError.invalidConfiguration("port \(configuration.port) is outside 0…65535")
        }
        guard let address = SocketAddressConversion.bind(host: configuration.host, port: UInt16(configuration.port))
        else {
            throw HTTPServerError.invalidConfiguration(
                "host '\(configuration.host)' is not a numeric IPv4 or IPv6 address (or localhost)"
            )
        }
        guard configuration.maxConnections > 0, configuration.threadCount > 0, configuration.maxBodySize >= 0,
            configuration.maxHeaderSize > 0, configuration.requestTimeout >= .zero,
            (configuration.maxConnectionsPerIP ?? 1) > 0
        else {
            throw HTTPServerError.invalidConfiguration("limits and thread count must be positive")
        }

        var flags =
            MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_POLL.rawValue
            | MHD_ALLOW_SUSPEND_RESUME.rawValue | MHD_USE_ERROR_LOG.rawValue
        if case .v6(let v6) = address {
            flags |= MHD_USE_IPv6.rawValue
            // `::` also accepts IPv4 clients.
            if withUnsafeBytes(of: v6.sin6_addr, { $0.allSatisfy { $0 == 0 } }) { flags |= MHD_USE_DUAL_STACK.rawValue }
        }

        let cls = Unmanaged.passUnretained(core).toOpaque()
        let timeoutSeconds = Self.wholeSeconds(configuration.connectionTimeout)
        // Room for the request line and headers (checked exactly in HTTPServerCore) plus what
        // libmicrohttpd keeps per connection and needs to build the response headers.
        let memoryLimit = configuration.maxHeaderSize + 8 * 1024
        // The logger comes first so that libmicrohttpd uses it for every later message.
        var options: [MHD_OptionItem] = [
            herald_mhd_option_external_logger(
                { cls, format, arguments in
                    guard let cls, let format, let arguments else { return }
                    var buffer = [CChar](repeating: 0, count: 512)
                    _ = herald_mhd_format_log_message(&buffer, buffer.count, format, arguments)
                    let message = String(
                        decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) },
                        as: UTF8.self
                    )
                    Unmanaged<HTTPServerCore>.fromOpaque(cls).takeUnretainedValue().daemonLog(message)
                },
                cls
            ),
            herald_mhd_option_number(.CONNECTION_MEMORY_LIMIT, memoryLimit),
            herald_mhd_option_number(.CONNECTION_LIMIT, configuration.maxConnections),
            herald_mhd_option_number(.CONNECTION_TIMEOUT, timeoutSeconds),
            herald_mhd_option_uri_log_callback(
                { cls, uri, connection in
                    guard let cls, let connection else { return nil }
                    return Unmanaged<HTTPServerCore>.fromOpaque(cls)._withUnsafeGuaranteedRef {
                        $0.requestStarted(connection: connection, target: uri)
                    }
                },
                cls
            ),
            herald_mhd_option_notify_completed(
                { cls, connection, slot, _ in
                    guard let cls, let slot else { return }
                    Unmanaged<HTTPServerCore>.fromOpaque(cls)._withUnsafeGuaranteedRef {
                        $0.requestCompleted(connection: connection, slot: slot)
                    }
                },
                cls
            ),
        ]
        if core.deadlines != nil {
            options.append(
                herald_mhd_option_notify_connection(
                    { cls, connection, context, event in
                        guard let cls, let connection, let context else { return }
                        Unmanaged<HTTPServerCore>.fromOpaque(cls)._withUnsafeGuaranteedRef { core in
                            guard let deadlines = core.deadlines else { return }
                            if herald_mhd_connection_started(event) {
                                deadlines.started(connection, context: context)
                            } else {
                                deadlines.closed(context: context)
                            }
                        }
                    },
                    cls
                )
            )
        }
        if let perIP = configuration.maxConnectionsPerIP {
            options.append(herald_mhd_option_number(.PER_IP_CONNECTION_LIMIT, perIP))
        }
        // libmicrohttpd splits the connection limit among its threads and refuses a pool larger
        // than the limit.
        let threads = min(configuration.threadCount, configuration.maxConnections)
        if threads > 1 {
            options.append(herald_mhd_option_number(.THREAD_POOL_SIZE, threads))
        }

        let accessHandler: MHD_AccessHandlerCallback = { cls, connection, _, method, _, upload, uploadSize, slot in
            guard let cls, let connection, let uploadSize, let slot else { return .NO }
            // The daemon holds the core for as long as it runs: no retain per call, on an object
            // every daemon thread shares.
            let keepGoing = Unmanaged<HTTPServerCore>.fromOpaque(cls)._withUnsafeGuaranteedRef { core in
                core.access(connection: connection, method: method, upload: upload, uploadSize: uploadSize, slot: slot)
            }
            return keepGoing ? .YES : .NO
        }

        func start(bindingTo socketAddress: UnsafeMutableRawPointer) -> OpaquePointer? {
            var items = options
            items.append(herald_mhd_option_pointer(.SOCK_ADDR, socketAddress))
            items.append(herald_mhd_option_end())
            return items.withUnsafeBufferPointer { items in
                herald_mhd_start_daemon(flags, UInt16(configuration.port), accessHandler, cls, items.baseAddress)
            }
        }
        let started: OpaquePointer?
        switch address {
        case .v4(var v4): started = withUnsafeMutablePointer(to: &v4) { start(bindingTo: $0) }
        case .v6(var v6): started = withUnsafeMutablePointer(to: &v6) { start(bindingTo: $0) }
        }
        guard let started else {
            throw HTTPServerError.startFailed(
                "libmicrohttpd did not start on \(configuration.host):\(configuration.port)"
                    + (core.lastMessage.map { ": \($0)" } ?? "")
            )
        }
        self.daemon = started
        self.core = core
        self.deadlines = core.deadlines
        self.port = Int(herald_mhd_get_daemon_info_bind_port(started))
        core.markStarted()
        deadlines?.start()
    }

    deinit {
        let pending = state.withLock { state -> (Bool, Int32?) in
            defer { state.stopped = true }
            return (state.stopped, state.quiescedSocket)
        }
        if !pending.0 {
            deadlines?.stop()
            core.close()
            MHD_stop_daemon(daemon)
            if let socket = pending.1 { Glibc.close(socket) }
        }
    }

    /// Stops accepting connections: new connection attempts are refused at once, while open
    /// connections go on being served.
    func quiesce() {
        state.withLock { state in
            guard !state.stopped, state.quiescedSocket == nil else { return }
            let socket = MHD_quiesce_daemon(daemon)
            guard socket >= 0 else { return }
            state.quiescedSocket = socket
            // libmicrohttpd's threads may still look at the socket, so it stays open until the
            // daemon stops; shutting it down makes Linux stop listening (pending and new
            // connection attempts are refused).
            Glibc.shutdown(socket, Int32(SHUT_RDWR))
        }
    }

    /// Stops the daemon and closes every connection. The caller must first have resumed every
    /// suspended connection (``HTTPServerCore/close()``). Blocks only a dedicated thread.
    func stop() async {
        let socket = state.withLock { state -> Int32?? in
            guard !state.stopped else { return .none }
            state.stopped = true
            return .some(state.quiescedSocket)
        }
        guard case .some(let quiescedSocket) = socket else { return }
        deadlines?.stop()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let thread = Thread { [self] in
                ThreadName.setCurrent("herald-http-stop")
                MHD_stop_daemon(daemon)
                if let quiescedSocket { Glibc.close(quiescedSocket) }
                continuation.resume()
            }
            thread.start()
        }
    }

    /// `duration` rounded up to whole seconds; 0 (no timeout) for zero or negative durations.
    static func wholeSeconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        guard seconds > 0 || (seconds == 0 && attoseconds > 0) else { return 0 }
        return Int(seconds) + (attoseconds > 0 ? 1 : 0)
    }
}
