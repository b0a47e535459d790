import Foundation
import Glibc
import HeraldCore
import Testing

@testable import HTTPServer

/// The total deadline on receiving a request (``HTTPServer/Configuration/requestTimeout``):
/// unlike the idle timeout, it closes connections whose clients keep trickling bytes.
@Suite("Request deadline")
struct RequestDeadlineTests {
    static func router() -> Router {
        var router = Router()
        router.get("/healthz") { _ in .text("ok") }
        router.post("/upload") { request in .text("got \(request.body.count)") }
        return router
    }

    @Test("1,100 clients sending a byte a second are all closed at the deadline; memory stays bounded")
    func tricklingClientsAreClosed() async throws {
        try Trickle.raiseFileLimit(to: 8192)
        let metrics = MetricsRegistry()
        try await withServer(
            configure: {
                $0.requestTimeout = .seconds(2)
                // Longer than the whole test: only the deadline may close the trickling clients.
                $0.connectionTimeout = .seconds(120)
            },
            responder: Self.router(),
            metrics: metrics
        ) { server, port in
            let before = try Trickle.residentBytes()
            // Gives up after 25 s, far past the 2 s deadline: a server without one keeps every
            // accepted client open (each sends a byte a second, never idle).
            let result = try await onThread { try Trickle.run(port: port, clients: 1_100, giveUpAfter: .seconds(25)) }
            let after = try Trickle.residentBytes()

            #expect(result.connected + result.refused == 1_100)
            #expect(result.stillOpen == 0, "connections the server never closed")
            #expect(result.answered == 0, "a trickled request was answered instead of cut off")
            // Generous: 1,100 connections with a few bytes each need a few megabytes.
            #expect(after - before < 128 << 20, "resident memory grew by \(after - before) bytes")

            // Every connection the server accepted (up to its 1,024) was cut off by the deadline.
            let closes = metrics.render().split(separator: "\n").first {
                $0.hasPrefix("herald_http_request_deadline_closes_total ")
            }
            let closed = closes.flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
            #expect(closed >= 1_024, "\(closes ?? "no herald_http_request_deadline_closes_total")")

            let health = try await RawConnection.request(port: port, "GET", "/healthz")
            #expect(health.status == 200)
            try await eventually("the cut-off requests to be released") { server.statistics.liveContexts == 0 }
        }
    }

    @Test("the deadline also ends a keep-alive connection's next request, not an answer being computed")
    func deadlineRestartsPerRequest() async throws {
        let gate = Gate()
        let started = Gate()
        try await withServer(
            configure: {
                $0.requestTimeout = .seconds(1)
                $0.connectionTimeout = .seconds(120)
            },
            responder: makeTestRouter(slowGate: gate, started: started)
        ) { _, port in
            let connection = try await RawConnection.open(port: port)
            defer { connection.close() }
            try await connection.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
            await started.wait()
            // The handler takes longer than the deadline: the connection stays, the answer arrives.
            _ = try await onThread { usleep(1_500_000) }
            gate.open()
            #expect(try await connection.readResponse().text == "slow done")
            // Then the next request gets a fresh deadline, which a half-sent request misses.
            try await connection.send("GET /items/1 HTTP/1.1\r\nHost: x\r\nX-Half: ")
            #expect(try await connection.waitForClose())
        }
    }

    @Test("invalid deadlines and per-address limits are refused at start-up")
    func invalidConfiguration() async throws {
        for change in [
            { (configuration: inout HTTPServer.Configuration) in configuration.requestTimeout = .seconds(-1) },
            { (configuration: inout HTTPServer.Configuration) in configuration.maxConnectionsPerIP = 0 },
        ] {
            var configuration = HTTPServer.Configuration()
            configuration.host = "127.0.0.1"
            configuration.port = 0
            change(&configuration)
            let server = HTTPServer(
                configuration: configuration,
                responder: Self.router(),
                logger: Logger(label: "test", level: .critical),
                metrics: MetricsRegistry()
            )
            await #expect(throws: HTTPServerError.self) { try await server.run() }
        }
    }

    @Test("maxConnectionsPerIP closes a client's connections past the limit")
    func perAddressLimit() async throws {
        try await withServer(configure: { $0.maxConnectionsPerIP = 2 }, responder: Self.router()) { _, port in
            // Three half-sent requests from one address: the server keeps two and closes one at
            // once; the reads of the two kept time out after 3 s.
            var connections: [RawConnection] = []
            for _ in 0..<3 {
                let connection = try await RawConnection.open(port: port, timeout: .seconds(3))
                try await connection.send("GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: ")
                connections.append(connection)
            }
            var closed: [Bool] = []
            for connection in connections { closed.append(try await connection.waitForClose()) }
            #expect(closed.filter { $0 }.count == 1)
            for connection in connections { connection.close() }
            try await eventually("a slot to free up") {
                (try? await RawConnection.request(port: port, "GET", "/healthz").status) == 200
            }
        }
    }
}

/// Many clients each sending one byte a second, driven by one thread with `poll`.
enum Trickle {
    struct Result: Sendable {
        /// Connections established (the server may still close them at once, when full).
        var connected = 0
        /// Connection attempts refused outright.
        var refused = 0
        /// Connections that received bytes (an answer) instead of being closed.
        var answered = 0
        /// Connections still open when the driver gave up.
        var stillOpen = 0
    }

    /// Resident memory of this process (the server runs in it), from `/proc/self/statm`.
    static func residentBytes() throws -> Int {
        let text = try String(contentsOfFile: "/proc/self/statm", encoding: .utf8)
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else {
            throw SocketError(operation: "read /proc/self/statm", code: EIO)
        }
        return pages * sysconf(Int32(_SC_PAGESIZE))
    }

    /// Raises this process's soft descriptor limit to `wanted` (or the hard limit, if lower).
    static func raiseFileLimit(to wanted: rlim_t) throws {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else {
            throw SocketError(operation: "getrlimit", code: errno)
        }
        guard limit.rlim_cur < wanted else { return }
        limit.rlim_cur = min(wanted, limit.rlim_max)
        guard setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else {
            throw SocketError(operation: "setrlimit", code: errno)
        }
    }

    /// Opens `clients` connections to 127.0.0.1:`port`; half trickle their request headers, half
    /// send whole headers announcing a body and trickle the body. Every second each open one
    /// sends its next byte, until the server has closed them all or `giveUpAfter` passed.
    static func run(port: Int, clients: Int, giveUpAfter: Duration) throws -> Result {
        let header = Array("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Trickle: ".utf8) + Array(repeating: 0x61, count: 200)
        let bodyHead = Array("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n".utf8)
        var result = Result()
        var sockets: [Int32] = []
        var scripts: [[UInt8]] = []
        defer { for fd in sockets where fd >= 0 { Glibc.close(fd) } }
        for index in 0..<clients {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { throw SocketError(operation: "socket", code: errno) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = UInt16(port).bigEndian
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard connected == 0 else {
                Glibc.close(fd)
                result.refused += 1
                continue
            }
            result.connected += 1
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            if index % 2 == 1 {
                _ = bodyHead.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                scripts.append(Array(repeating: 0x62, count: 1000))
            } else {
                scripts.append(header)
            }
            sockets.append(fd)
        }

        var sent = [Int](repeating: 0, count: sockets.count)
        var open = sockets.count
        func finish(_ index: Int) {
            Glibc.close(sockets[index])
            sockets[index] = -1
            open -= 1
        }
        let giveUp = ContinuousClock.now + giveUpAfter
        var nextTick = ContinuousClock.now
        var buffer = [UInt8](repeating: 0, count: 4096)
        while open > 0, ContinuousClock.now < giveUp {
            if ContinuousClock.now >= nextTick {
                for index in sockets.indices where sockets[index] >= 0 {
                    var byte = scripts[index][sent[index] % scripts[index].count]
                    let written = Glibc.send(sockets[index], &byte, 1, Int32(MSG_NOSIGNAL))
                    if written == 1 {
                        sent[index] += 1
                    } else if errno != EAGAIN {
                        finish(index)
                    }
                }
                nextTick = nextTick + .seconds(1)
            }
            var polled = sockets.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            let remaining = (nextTick - ContinuousClock.now).components
            let wait = max(0, min(1000, remaining.seconds * 1000 + remaining.attoseconds / 1_000_000_000_000_000 + 1))
            let ready = poll(&polled, nfds_t(polled.count), Int32(wait))
            guard ready > 0 else { continue }
            for index in polled.indices where polled[index].fd >= 0 && polled[index].revents != 0 {
                let received = buffer.withUnsafeMutableBytes { recv(polled[index].fd, $0.baseAddress, $0.count, 0) }
                if received > 0 {
                    result.answered += 1
                    finish(index)
                } else if received == 0 || errno != EAGAIN {
                    finish(index)
                }
            }
        }
        result.stillOpen = open
        return result
    }
}
