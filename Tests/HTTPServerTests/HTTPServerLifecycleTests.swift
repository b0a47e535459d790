import AsyncTestSupport
import Foundation
import HeraldCore
import Testing

@testable import HTTPRouting
@testable import HTTPServer

// Shutdown, cancellation and start-up failures of run().
extension HTTPServerLiveTests {
    @Test("graceful shutdown: in-flight request answered, new connections refused, run() returns")
    func gracefulShutdown() async throws {
        let gate = Gate()
        defer { gate.open() }
        let started = Gate()
        var configuration = HTTPServer.Configuration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.shutdownTimeout = .seconds(30)
        let metrics = MetricsRegistry()
        let server = HTTPServer(
            configuration: configuration,
            responder: makeTestRouter(slowGate: gate, started: started),
            logger: Logger(label: "test.http", level: .critical),
            metrics: metrics
        )
        let running = Task { try await server.run() }
        let port = try await withDeadline("the server to listen") { try await server.listeningPort() }

        let connection = try await RawConnection.open(port: port)
        defer { connection.close() }
        try await connection.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        try await withDeadline("the handler to start") { await started.wait() }

        server.triggerGracefulShutdown()
        try await eventually("new connections to be refused") { try await RawConnection.isRefused(port: port) }
        #expect(server.statistics.inFlight == 1)
        #expect(metrics.value("herald_http_requests_in_flight") == 1)

        gate.open()
        let response = try await connection.readResponse()
        #expect(response.status == 200)
        #expect(response.text == "slow done")
        #expect(response.headers["Connection"]?.lowercased() == "close")
        try await withDeadline("run() to return") { try await running.value }
        #expect(server.statistics.liveContexts == 0)
        #expect(metrics.value("herald_http_requests_in_flight") == 0)
    }

    @Test("shutdown timeout: a handler that never answers is cancelled and run() still returns")
    func shutdownTimeout() async throws {
        let started = Gate()
        var router = Router()
        router.get("/forever") { _ in
            started.open()
            // A handler that never answers: only the shutdown's cancellation ends this sleep.
            try await Task.sleep(for: .seconds(3600))
            return .text("never")
        }
        var configuration = HTTPServer.Configuration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.shutdownTimeout = .milliseconds(200)
        let server = HTTPServer(
            configuration: configuration,
            responder: router,
            logger: Logger(label: "test.http", level: .critical),
            metrics: MetricsRegistry()
        )
        let running = Task { try await server.run() }
        let port = try await withDeadline("the server to listen") { try await server.listeningPort() }
        let connection = try await RawConnection.open(port: port)
        defer { connection.close() }
        try await connection.send("GET /forever HTTP/1.1\r\nHost: x\r\n\r\n")
        try await withDeadline("the handler to start") { await started.wait() }

        server.triggerGracefulShutdown()
        try await withDeadline("run() to return") { try await running.value }
        // The cancelled handler's error answer may go out before run() closes the connection,
        // as in `cancellation()`. Either way the connection must end.
        #expect(try await connection.waitForEnd())
        try await eventually("contexts to be released") { server.statistics.liveContexts == 0 }
    }

    @Test("shutdown requested before run(): run() returns at once and no port is reported")
    func shutdownBeforeRun() async throws {
        var configuration = HTTPServer.Configuration()
        configuration.port = 0
        let server = HTTPServer(
            configuration: configuration,
            responder: Router(),
            logger: Logger(label: "test.http", level: .critical),
            metrics: MetricsRegistry()
        )
        server.triggerGracefulShutdown()
        try await withDeadline("run() to return") { try await server.run() }
        await #expect(throws: HTTPServerError.notListening) { try await server.listeningPort() }
        await #expect(throws: HTTPServerError.alreadyRunning) { try await server.run() }
    }

    @Test("a port in use: run() throws startFailed")
    func portInUse() async throws {
        try await withServer(responder: makeTestRouter()) { _, port in
            var configuration = HTTPServer.Configuration()
            configuration.host = "127.0.0.1"
            configuration.port = port
            let second = HTTPServer(
                configuration: configuration,
                responder: Router(),
                logger: Logger(label: "test.http", level: .critical),
                metrics: MetricsRegistry()
            )
            let error = await #expect(throws: HTTPServerError.startFailed("")) { try await second.run() }
            #expect(error?.reason.contains("in use") == true)
            await #expect(throws: HTTPServerError.notListening) { try await second.listeningPort() }
        }
    }

    @Test("cancelling run() closes in-flight requests and returns")
    func cancellation() async throws {
        let started = Gate()
        let gate = Gate()
        defer { gate.open() }
        var configuration = HTTPServer.Configuration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        let server = HTTPServer(
            configuration: configuration,
            responder: makeTestRouter(slowGate: gate, started: started),
            logger: Logger(label: "test.http", level: .critical),
            metrics: MetricsRegistry()
        )
        let running = Task { try await server.run() }
        let port = try await withDeadline("the server to listen") { try await server.listeningPort() }
        let connection = try await RawConnection.open(port: port)
        defer { connection.close() }
        try await connection.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        try await withDeadline("the handler to start") { await started.wait() }

        running.cancel()
        // The handler ignores cancellation until its gate opens: run() waits for it, then returns.
        gate.open()
        try await withDeadline("run() to return") { try await running.value }
        // The handler may return before run() closes the connections; its answer then goes out
        // first (seen on a loaded machine). Either way the connection must end.
        #expect(try await connection.waitForEnd())
        #expect(try await RawConnection.isRefused(port: port))
        try await eventually("contexts to be released") { server.statistics.liveContexts == 0 }
    }
}

@Suite("HTTPServer configuration")
struct HTTPServerConfigurationTests {
    @Test("serves and shuts down with one thread or a pool", arguments: [1, 3])
    func threadCounts(threads: Int) async throws {
        try await withServer(configure: { $0.threadCount = threads }, responder: makeTestRouter()) { _, port in
            let connection = try await RawConnection.open(port: port)
            defer { connection.close() }
            for index in 0..<3 {
                try await connection.send("GET /items/\(index) HTTP/1.1\r\nHost: x\r\n\r\n")
                let response = try await connection.readResponse()
                #expect(try response.json()["id"] as? String == String(index))
            }
        }
    }

    @Test("an unusable host or port makes run() throw invalidConfiguration")
    func invalidConfiguration() async throws {
        for configure in [{ (c: inout HTTPServer.Configuration) in c.host = "example.com" }, { $0.port = 70_000 }] {
            var configuration = HTTPServer.Configuration()
            configure(&configuration)
            let server = HTTPServer(
                configuration: configuration,
                responder: Router(),
                logger: Logger(label: "test.http", level: .critical),
                metrics: MetricsRegistry()
            )
            await #expect(throws: HTTPServerError.invalidConfiguration("")) { try await server.run() }
        }
    }
}
