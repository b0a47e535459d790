import AsyncTestSupport
import Foundation
import Glibc
import HeraldCore
import Testing

@testable import HTTPRouting
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

    @Test("the deadline also ends a keep-alive connection's next request, not an answer being computed")
    func deadlineRestartsPerRequest() async throws {
        let gate = Gate()
        let started = Gate()
        try await withServer(
            configure: {
                $0.requestTimeout = .seconds(2)
                $0.connectionTimeout = .seconds(120)
            },
            responder: makeTestRouter(slowGate: gate, started: started)
        ) { _, port in
            // Whatever fails below, the handler must end, or the server's shutdown waits for it.
            defer { gate.open() }
            let connection = try await RawConnection.open(port: port)
            defer { connection.close() }
            try await connection.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
            try await withDeadline("the handler to start") { await started.wait() }
            // The handler takes longer than the deadline: the connection stays, the answer arrives.
            // A sleep: the server's deadline runs on the real clock, so real time must pass it.
            _ = try await onThread { usleep(2_500_000) }
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
            try await eventually("a slot to free up", timeout: .seconds(60)) {
                (try? await RawConnection.request(port: port, "GET", "/healthz").status) == 200
            }
        }
    }
}
