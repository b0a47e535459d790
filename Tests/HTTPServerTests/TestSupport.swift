import AsyncTestSupport
import Foundation
import Glibc
import HeraldCore
import Synchronization
import Testing

@testable import HTTPRouting
@testable import HTTPServer

/// Log records kept in memory, for assertions on what was (and was not) logged.
final class CapturingLogHandler: LogHandler {
    private let records = Mutex<[LogRecord]>([])

    func log(_ record: LogRecord) {
        records.withLock { $0.append(record) }
    }

    var all: [LogRecord] { records.withLock { $0 } }

    func metadata(_ record: LogRecord) -> [String: LogValue] {
        Dictionary(record.metadata.map { ($0.key, $0.value) }, uniquingKeysWith: { _, last in last })
    }
}

/// A one-shot signal between a handler and a test body.
final class Gate: Sendable {
    private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { state -> Bool in
                if state.open { return true }
                state.waiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    func open() {
        let waiters = state.withLock { state in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}

/// Runs a server on an ephemeral loopback port for the duration of `body`, then shuts it down
/// gracefully and checks that `run()` returned.
func withServer(
    configure: (inout HTTPServer.Configuration) -> Void = { _ in },
    responder: any HTTPResponder,
    middleware: [any HTTPMiddleware]? = nil,
    logger: Logger = Logger(label: "test.http", level: .critical),
    metrics: MetricsRegistry = MetricsRegistry(),
    _ body: (HTTPServer, Int) async throws -> Void
) async throws {
    var configuration = HTTPServer.Configuration()
    configuration.host = "127.0.0.1"
    configuration.port = 0
    configuration.shutdownTimeout = .seconds(5)
    configure(&configuration)
    let server =
        if let middleware {
            HTTPServer(
                configuration: configuration,
                responder: responder,
                middleware: middleware,
                logger: logger,
                metrics: metrics
            )
        } else {
            HTTPServer(configuration: configuration, responder: responder, logger: logger, metrics: metrics)
        }
    let running = Task { try await server.run() }
    do {
        let port = try await withDeadline("the server to listen") { try await server.listeningPort() }
        try await body(server, port)
    } catch {
        server.triggerGracefulShutdown()
        _ = try? await running.value
        throw error
    }
    server.triggerGracefulShutdown()
    try await withDeadline("run() to return") { try await running.value }
}

/// Runs blocking socket code on a thread of its own, never on Swift's cooperative pool (whose
/// threads the server's handlers need).
func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
        let thread = Thread { continuation.resume(with: Result { try body() }) }
        thread.start()
    }
}

struct SocketError: Error, CustomStringConvertible {
    var operation: String
    var code: Int32
    var description: String { "\(operation) failed: \(String(cString: strerror(code)))" }
}

/// A parsed HTTP/1.1 response.
struct RawResponse: Sendable {
    var status: Int
    var headers: HTTPHeaders
    var body: [UInt8]

    var text: String { String(decoding: body, as: UTF8.self) }

    func json() throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] ?? [:]
    }

    /// `error.code` of an API error body.
    var errorCode: String? {
        ((try? json())?["error"] as? [String: Any])?["code"] as? String
    }
}

/// A plain TCP client over blocking POSIX sockets, for sending exactly the bytes a test wants.
/// Every call does its blocking work on a dedicated thread.
final class RawConnection: Sendable {
    let fd: Int32
    private let buffer = Mutex<[UInt8]>([])

    private init(fd: Int32) {
        self.fd = fd
    }

    /// Connects to 127.0.0.1:`port`; reads and writes time out after `timeout`.
    static func open(port: Int, timeout: Duration = .seconds(10)) async throws -> RawConnection {
        try await onThread { try RawConnection(fd: connectBlocking(port: port, timeout: timeout)) }
    }

    /// Connects and sends `text` in one blocking step, with no scheduling gap between the two.
    static func open(port: Int, sending text: String) async throws -> RawConnection {
        try await onThread {
            let connection = try RawConnection(fd: connectBlocking(port: port, timeout: .seconds(10)))
            do {
                try connection.sendBlocking(Array(text.utf8))
            } catch {
                connection.close()
                throw error
            }
            return connection
        }
    }

    /// Whether a connection attempt to `port` is refused right now.
    static func isRefused(port: Int) async throws -> Bool {
        try await onThread {
            do {
                let fd = try connectBlocking(port: port, timeout: .seconds(2))
                Glibc.close(fd)
                return false
            } catch let error as SocketError where error.code == ECONNREFUSED {
                return true
            }
        }
    }

    private static func connectBlocking(port: Int, timeout: Duration) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SocketError(operation: "socket", code: errno) }
        var time = timeval(tv_sec: Int(timeout.components.seconds), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            let code = errno
            Glibc.close(fd)
            throw SocketError(operation: "connect", code: code)
        }
        return fd
    }

    func send(_ text: String) async throws {
        try await send(Array(text.utf8))
    }

    func send(_ bytes: [UInt8]) async throws {
        try await onThread { try self.sendBlocking(bytes) }
    }

    private func sendBlocking(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard sent > 0 else { throw SocketError(operation: "send", code: errno) }
            offset += sent
        }
    }

    /// Reads one response; `head` for the answer to a HEAD request (no body follows).
    func readResponse(head: Bool = false) async throws -> RawResponse {
        try await onThread { try self.readResponseBlocking(head: head) }
    }

    /// Waits until the server closes the connection (end of stream or reset); `false` if data
    /// arrived instead or the read timed out.
    func waitForClose() async throws -> Bool {
        let fd = self.fd
        return try await onThread {
            var byte: UInt8 = 0
            let received = recv(fd, &byte, 1, 0)
            if received == 0 { return true }
            if received < 0 { return errno == ECONNRESET }
            return false
        }
    }

    /// Reads until the peer closes (end of stream or a reset): `true` then, `false` on a receive
    /// timeout or after 1 MB. Unlike ``waitForClose()``, bytes before the end are allowed.
    func waitForEnd() async throws -> Bool {
        let fd = self.fd
        return try await onThread {
            var chunk = [UInt8](repeating: 0, count: 4096)
            var total = 0
            while total < 1 << 20 {
                let received = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if received == 0 { return true }
                if received < 0 { return errno == ECONNRESET }
                total += received
            }
            return false
        }
    }

    func close() {
        Glibc.close(fd)
    }

    /// Closes with a TCP reset, as a client that vanished would.
    func abort() {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        Glibc.close(fd)
    }

    private func fill() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        let received = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if received < 0 { throw SocketError(operation: "recv", code: errno) }
        if received == 0 { return false }
        buffer.withLock { $0.append(contentsOf: chunk[..<received]) }
        return true
    }

    private func take(_ count: Int) -> [UInt8] {
        buffer.withLock { buffer in
            defer { buffer.removeFirst(count) }
            return Array(buffer[..<count])
        }
    }

    private func readLine() throws -> String {
        while true {
            let line = buffer.withLock { buffer -> [UInt8]? in
                guard let end = buffer.firstIndex(of: UInt8(ascii: "\n")) else { return nil }
                defer { buffer.removeFirst(end + 1) }
                return Array(buffer[..<end])
            }
            if let line { return String(decoding: line.last == 13 ? line.dropLast() : line[...], as: UTF8.self) }
            guard try fill() else { throw SocketError(operation: "read line (closed)", code: ECONNRESET) }
        }
    }

    private func readExactly(_ count: Int) throws -> [UInt8] {
        while buffer.withLock({ $0.count }) < count {
            guard try fill() else { throw SocketError(operation: "read body (closed)", code: ECONNRESET) }
        }
        return take(count)
    }

    private func readResponseBlocking(head: Bool) throws -> RawResponse {
        let statusLine = try readLine()
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]) else {
            throw SocketError(operation: "parse status line '\(statusLine)'", code: EPROTO)
        }
        var headers = HTTPHeaders()
        while true {
            let line = try readLine()
            if line.isEmpty { break }
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.add(
                name: String(line[..<colon]),
                value: line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            )
        }
        if head || status == 204 || status == 304 { return RawResponse(status: status, headers: headers, body: []) }
        var body: [UInt8] = []
        if let length = headers["Content-Length"].flatMap(Int.init) {
            body = try readExactly(length)
        } else if headers["Transfer-Encoding"]?.lowercased() == "chunked" {
            while true {
                let size = Int(try readLine().split(separator: ";")[0], radix: 16) ?? 0
                if size == 0 {
                    while !(try readLine()).isEmpty {}
                    break
                }
                body += try readExactly(size)
                _ = try readLine()
            }
        } else {
            while try fill() {}
            body = take(buffer.withLock { $0.count })
        }
        return RawResponse(status: status, headers: headers, body: body)
    }
}

extension RawConnection {
    /// Sends `request` on a new connection and reads one response, in one blocking step on one
    /// thread: a server with a short `connectionTimeout` must not see the gap a busy cooperative
    /// pool can leave between an `await`ed connect and the send that follows it.
    static func exchange(port: Int, _ request: String, head: Bool = false) async throws -> RawResponse {
        try await onThread {
            let connection = try RawConnection(fd: connectBlocking(port: port, timeout: .seconds(10)))
            defer { connection.close() }
            try connection.sendBlocking(Array(request.utf8))
            return try connection.readResponseBlocking(head: head)
        }
    }

    /// `GET path` (or another method) with `Connection: close`.
    static func request(
        port: Int,
        _ method: String = "GET",
        _ target: String,
        headers: [(String, String)] = [],
        body: String = ""
    ) async throws -> RawResponse {
        var text = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        if !body.isEmpty || method == "POST" || method == "PUT" { text += "Content-Length: \(body.utf8.count)\r\n" }
        text += "\r\n" + body
        return try await exchange(port: port, text, head: method == "HEAD")
    }
}
