import AsyncTestSupport
import Foundation
import HeraldCore
import Testing

@testable import HTTPRouting
@testable import HTTPServer

/// A router exercising what the live tests need.
func makeTestRouter(slowGate: Gate? = nil, started: Gate? = nil) -> Router {
    var router = Router()
    router.get("/items/{id}") { request in
        .json([
            "id": request.parameters["id"] ?? "",
            "path": request.path,
            "rawPath": request.rawPath,
            "sort": request.queryValue("sort") ?? "",
            "requestID": request.requestID,
        ])
    }
    router.delete("/items/{id}") { _ in HTTPResponse(status: 204) }
    router.post("/echo") { request in
        HTTPResponse(status: 200, headers: ["Content-Type": "application/octet-stream"], body: request.body)
    }
    router.get("/fail/http") { _ in
        throw HTTPError(status: 409, code: "state_conflict", message: "Already done.", field: "state")
    }
    router.get("/fail/other") { _ in
        struct Boom: Error {}
        throw Boom()
    }
    router.get("/slow") { _ in
        started?.open()
        await slowGate?.wait()
        return .text("slow done")
    }
    return router
}

@Suite("HTTPServer, live on a loopback port")
struct HTTPServerLiveTests {
    @Test("routes with path parameters, decoded, and the query's last value")
    func routingWithParameters() async throws {
        try await withServer(responder: makeTestRouter()) { _, port in
            let response = try await RawConnection.request(port: port, "GET", "/items/a%2Fb%20c?sort=old&sort=new")
            #expect(response.status == 200)
            #expect(response.headers["Content-Type"] == "application/json")
            let json = try response.json()
            #expect(json["id"] as? String == "a/b c")
            #expect(json["rawPath"] as? String == "/items/a%2Fb%20c")
            #expect(json["path"] as? String == "/items/a/b c")
            #expect(json["sort"] as? String == "new")

            let echo = try await RawConnection.request(port: port, "POST", "/echo", body: "hello body")
            #expect(echo.status == 200)
            #expect(echo.text == "hello body")
        }
    }

    @Test("unknown path: 404 with the JSON error body")
    func notFound() async throws {
        try await withServer(responder: makeTestRouter()) { _, port in
            let response = try await RawConnection.request(port: port, "GET", "/nope")
            #expect(response.status == 404)
            #expect(response.headers["Content-Type"] == "application/json")
            #expect(response.errorCode == "not_found")
        }
    }

    @Test("known path, wrong method: 405 with Allow")
    func methodNotAllowed() async throws {
        try await withServer(responder: makeTestRouter()) { _, port in
            let response = try await RawConnection.request(port: port, "PUT", "/items/7")
            #expect(response.status == 405)
            #expect(response.errorCode == "method_not_allowed")
            #expect(response.headers["Allow"] == "DELETE, GET, HEAD")
        }
    }

    @Test("HEAD falls back to GET: same Content-Length, no body on the wire")
    func headFallback() async throws {
        try await withServer(responder: makeTestRouter()) { _, port in
            let get = try await RawConnection.request(port: port, "GET", "/items/42")
            let connection = try await RawConnection.open(port: port)
            defer { connection.close() }
            try await connection.send("HEAD /items/42 HTTP/1.1\r\nHost: x\r\n\r\n")
            let head = try await connection.readResponse(head: true)
            #expect(head.status == 200)
            #expect(head.headers["Content-Length"] == String(get.body.count))
            #expect(get.body.count > 0)
            // Had a body followed the HEAD answer, this would read it as a status line and fail.
            try await connection.send("GET /items/43 HTTP/1.1\r\nHost: x\r\n\r\n")
            let next = try await connection.readResponse()
            #expect(next.status == 200)
            #expect(try next.json()["id"] as? String == "43")
        }
    }

    @Test("a sane X-Request-Id is echoed; anything else is replaced by a UUID")
    func requestIDEcho() async throws {
        try await withServer(responder: makeTestRouter()) { _, port in
            let sane = try await RawConnection.request(
                port: port,
                "GET",
                "/items/1",
                headers: [("X-Request-Id", "abc-123_x.y")]
            )
            #expect(sane.headers["X-Request-Id"] == "abc-123_x.y")
            #expect(try sane.json()["requestID"] as? String == "abc-123_x.y")

            let insane = try await RawConnection.request(
                port: port,
                "GET",
                "/items/1",
                headers: [("X-Request-Id", "bad id!")]
            )
            let replaced = try #require(insane.headers["X-Request-Id"])
            #expect(replaced != "bad id!")
            #expect(UUID(uuidString: replaced) != nil)

            let missing = try await RawConnection.request(port: port, "GET", "/nope")
            #expect(UUID(uuidString: missing.headers["X-Request-Id"] ?? "") != nil)
        }
    }

    @Test("thrown errors become JSON: HTTPError keeps its status, others are a logged 500")
    func thrownErrors() async throws {
        let logs = CapturingLogHandler()
        let logger = Logger(label: "test.http", level: .info, handler: logs)
        try await withServer(responder: makeTestRouter(), logger: logger) { _, port in
            let http = try await RawConnection.request(port: port, "GET", "/fail/http")
            #expect(http.status == 409)
            #expect(http.headers["Content-Type"] == "application/json")
            #expect(
                http.text == #"{"error":{"code":"state_conflict","message":"Already done.","field":"state"}}"#
            )

            let other = try await RawConnection.request(
                port: port,
                "GET",
                "/fail/other",
                headers: [("X-Request-Id", "req-500")]
            )
            #expect(other.status == 500)
            #expect(other.errorCode == "internal_error")
            #expect(!other.text.contains("Boom"))
            let errorLines = logs.all.filter { $0.level == .error }
            #expect(errorLines.count == 1)
            #expect(errorLines.first.map { logs.metadata($0)["request_id"] } == .string("req-500"))
            #expect(errorLines.first.map { logs.metadata($0)["route"] } == .string("/fail/other"))
        }
    }

    @Test("headers over maxHeaderSize: 431, and the server goes on serving")
    func headersTooLarge() async throws {
        try await withServer(responder: makeTestRouter()) { server, port in
            // Just over the limit: the server's own check, with the JSON error body.
            let over = try await RawConnection.request(
                port: port,
                "GET",
                "/items/1",
                headers: [("X-Big", String(repeating: "a", count: 17 * 1024))]
            )
            #expect(over.status == 431)
            #expect(over.errorCode == "headers_too_large")

            // Far over: libmicrohttpd's connection memory runs out first. 0.9.75 answers 431.
            let connection = try await RawConnection.open(port: port)
            defer { connection.close() }
            try await connection.send(
                "GET /items/1 HTTP/1.1\r\nHost: x\r\nX-Huge: \(String(repeating: "b", count: 64 * 1024))\r\n\r\n"
            )
            let huge = try await connection.readResponse()
            #expect(huge.status == 431)

            let after = try await RawConnection.request(port: port, "GET", "/items/2")
            #expect(after.status == 200)
            try await eventually("rejected requests to be released") { server.statistics.liveContexts == 0 }
        }
    }

    @Test("body over maxBodySize with Content-Length: 413 before the body is read")
    func bodyTooLargeContentLength() async throws {
        try await withServer(configure: { $0.maxBodySize = 1024 }, responder: makeTestRouter()) { _, port in
            let connection = try await RawConnection.open(port: port)
            defer { connection.close() }
            // Only the headers are sent: the answer must not wait for the 10 MB body.
            try await connection.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000\r\n\r\n")
            let response = try await connection.readResponse()
            #expect(response.status == 413)
            #expect(response.errorCode == "body_too_large")

            let atLimit = try await RawConnection.request(
                port: port,
                "POST",
                "/echo",
                body: String(repeating: "x", count: 1024)
            )
            #expect(atLimit.status == 200)
            #expect(atLimit.body.count == 1024)
        }
    }

    @Test("chunked body over maxBodySize: 413 and the connection closed")
    func bodyTooLargeChunked() async throws {
        try await withServer(configure: { $0.maxBodySize = 1024 }, responder: makeTestRouter()) { _, port in
            let connection = try await RawConnection.open(port: port)
            defer { connection.close() }
            var request = "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            for _ in 0..<4 { request += "3e8\r\n" + String(repeating: "z", count: 1000) + "\r\n" }
            request += "0\r\n\r\n"
            try await connection.send(request)
            let response = try await connection.readResponse()
            #expect(response.status == 413)
            #expect(response.errorCode == "body_too_large")
            #expect(response.headers["Connection"]?.lowercased() == "close")

            var small = "POST /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n"
            small += "5\r\nhello\r\n0\r\n\r\n"
            let ok = try await RawConnection.exchange(port: port, small)
            #expect(ok.status == 200)
            #expect(ok.text == "hello")
        }
    }

    @Test("refusals before the handler (413, 431, a bad path) are logged and counted like answers")
    func refusalsAreLoggedAndCounted() async throws {
        let logs = CapturingLogHandler()
        let logger = Logger(label: "test.http", level: .info, handler: logs)
        let metrics = MetricsRegistry()
        var router = makeTestRouter()
        router.logPaths(of: "/echo") { _ in "/echo (shown)" }
        try await withServer(
            configure: { $0.maxBodySize = 1024 },
            responder: router,
            logger: logger,
            metrics: metrics
        ) { _, port in
            let declared = try await RawConnection.open(port: port)
            defer { declared.close() }
            try await declared.send(
                "POST /echo HTTP/1.1\r\nHost: x\r\nX-Request-Id: big-1\r\nContent-Length: 5000\r\n\r\n"
            )
            let tooLarge = try await declared.readResponse()
            #expect(tooLarge.status == 413)
            #expect(tooLarge.headers["X-Request-Id"] == "big-1")

            let chunked = try await RawConnection.open(port: port)
            defer { chunked.close() }
            var request = "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            for _ in 0..<2 { request += "3e8\r\n" + String(repeating: "z", count: 1000) + "\r\n" }
            try await chunked.send(request + "0\r\n\r\n")
            #expect(try await chunked.readResponse().status == 413)

            let headers = try await RawConnection.request(
                port: port,
                "GET",
                "/items/7",
                headers: [("X-Big", String(repeating: "a", count: 17 * 1024))]
            )
            #expect(headers.status == 431)
            let badPath = try await RawConnection.request(port: port, "GET", "/items/%FF")
            #expect(badPath.status == 400)

            try await eventually("four access-log lines") { logs.all.filter { $0.message == "request" }.count == 4 }
            let lines = logs.all.filter { $0.message == "request" }.map { logs.metadata($0) }
            let refusedUpload = try #require(lines.first { $0["request_id"] == .string("big-1") })
            #expect(refusedUpload["status"] == .int(413))
            #expect(refusedUpload["route"] == .string("/echo"))
            #expect(refusedUpload["path"] == .string("/echo (shown)"))
            #expect(lines.filter { $0["status"] == .int(413) }.count == 2)
            let tooManyHeaders = try #require(lines.first { $0["status"] == .int(431) })
            #expect(tooManyHeaders["route"] == .string("/items/{id}"))
            #expect(tooManyHeaders["path"] == .string("/items/7"))
            #expect(lines.contains { $0["status"] == .int(400) && $0["path"] == .string("/items/%FF") })
            #expect(
                metrics.value(
                    "herald_http_requests_total",
                    labels: [("method", "POST"), ("route", "/echo"), ("status", "413")]
                ) == 2
            )
            #expect(
                metrics.value(
                    "herald_http_requests_total",
                    labels: [("method", "GET"), ("route", "/items/{id}"), ("status", "431")]
                ) == 1
            )
        }
    }

    @Test("malformed request line: 400, and the next connection is served")
    func malformedRequestLine() async throws {
        try await withServer(responder: makeTestRouter()) { _, port in
            let response = try await RawConnection.exchange(port: port, "NOT A VALID REQUEST\r\n\r\n")
            #expect(response.status == 400)

            let next = try await RawConnection.request(port: port, "GET", "/items/9")
            #expect(next.status == 200)
        }
    }

    @Test("a stalled client does not block others and is closed after connectionTimeout")
    func slowClient() async throws {
        try await withServer(configure: { $0.connectionTimeout = .seconds(1) }, responder: makeTestRouter()) {
            server,
            port in
            let stalled = try await RawConnection.open(
                port: port,
                sending: "GET /items/1 HTTP/1.1\r\nHost: x\r\nX-Half: "
            )
            defer { stalled.close() }

            for index in 0..<3 {
                let response = try await RawConnection.request(port: port, "GET", "/items/\(index)")
                #expect(response.status == 200)
            }
            // The read times out after 10 s; the server closes after about 1 s.
            #expect(try await stalled.waitForClose())
            try await eventually("the stalled request to be released") { server.statistics.liveContexts == 0 }
        }
    }

    @Test("a client vanishing while its handler runs: no crash, no leak, server still answers")
    func abruptDisconnect() async throws {
        let gate = Gate()
        let started = Gate()
        try await withServer(responder: makeTestRouter(slowGate: gate, started: started)) { server, port in
            let connection = try await RawConnection.open(port: port)
            try await connection.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
            try await withDeadline("the handler to start") { await started.wait() }
            connection.abort()
            gate.open()

            try await eventually("the request to be released") {
                server.statistics.liveContexts == 0 && server.statistics.inFlight == 0
            }
            let after = try await RawConnection.request(port: port, "GET", "/slow")
            #expect(after.status == 200)
            #expect(after.text == "slow done")
        }
    }

    @Test("keep-alive: two requests on one connection")
    func keepAlive() async throws {
        try await withServer(responder: makeTestRouter()) { _, port in
            let connection = try await RawConnection.open(port: port)
            defer { connection.close() }
            try await connection.send("GET /items/1 HTTP/1.1\r\nHost: x\r\n\r\n")
            let first = try await connection.readResponse()
            try await connection.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc")
            let second = try await connection.readResponse()
            #expect(first.status == 200)
            #expect(first.headers["Connection"]?.lowercased() != "close")
            #expect(second.status == 200)
            #expect(second.text == "abc")
        }
    }

    @Test("graceful shutdown: in-flight request answered, new connections refused, run() returns")
    func gracefulShutdown() async throws {
        let gate = Gate()
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

    @Test("the access log shows a response's loggedPath, or its route's rule, instead of the path")
    func accessLogUsesLoggedPath() async throws {
        let logs = CapturingLogHandler()
        let logger = Logger(label: "test.http", level: .info, handler: logs)
        var router = Router()
        router.get("/devices/{token}") { request in
            var response = HTTPResponse(status: 204)
            response.loggedPath = "/devices/\(request.parameters["token"]?.prefix(4) ?? "")…"
            return response
        }
        // A rule for every answer on the pattern, thrown errors included.
        router.get("/keys/{key}") { _ in throw HTTPError(status: 403, code: "forbidden", message: "no") }
        router.logPaths(of: "/keys/{key}") { request in String(request.rawPath.prefix(9)) + "…" }
        try await withServer(responder: router, logger: logger, metrics: MetricsRegistry()) { _, port in
            let response = try await RawConnection.request(port: port, "GET", "/devices/0123456789abcdef")
            #expect(response.status == 204)
            #expect(try await RawConnection.request(port: port, "GET", "/keys/fedcba9876543210").status == 403)
            let lines = logs.all.filter { $0.message == "request" }
            #expect(lines.count == 2)
            let paths = lines.map { logs.metadata($0)["path"] }
            #expect(paths.contains(.string("/devices/0123…")))
            #expect(paths.contains(.string("/keys/fed…")))
            let text = lines.map { StreamLogHandler.render($0, format: .text) }.joined()
            #expect(!text.contains("0123456789abcdef"))
            #expect(!text.contains("fedcba9876543210"))
        }
    }

    @Test("one access-log line per request, labelled by route; no credentials logged")
    func accessLogAndMetrics() async throws {
        let logs = CapturingLogHandler()
        let logger = Logger(label: "test.http", level: .info, handler: logs)
        let metrics = MetricsRegistry()
        try await withServer(responder: makeTestRouter(), logger: logger, metrics: metrics) { _, port in
            let response = try await RawConnection.request(
                port: port,
                "GET",
                "/items/secret-id?token=hunter2",
                headers: [("Authorization", "Bearer sk-live-123"), ("X-Request-Id", "log-1")]
            )
            #expect(response.status == 200)
            _ = try await RawConnection.request(port: port, "GET", "/nope")

            let lines = logs.all.filter { $0.message == "request" }
            #expect(lines.count == 2)
            let line = try #require(lines.first { logs.metadata($0)["request_id"] == .string("log-1") })
            let fields = logs.metadata(line)
            #expect(line.level == .info)
            #expect(fields["method"] == .string("GET"))
            #expect(fields["route"] == .string("/items/{id}"))
            #expect(fields["path"] == .string("/items/secret-id"))
            #expect(fields["status"] == .int(200))
            #expect(fields["bytes"] == .int(response.body.count))
            #expect(fields["remote"] == .string("127.0.0.1"))
            if case .double(let milliseconds) = fields["duration_ms"] {
                #expect(milliseconds >= 0)
            } else {
                Issue.record("duration_ms is not a number")
            }
            let everything = logs.all.map { StreamLogHandler.render($0, format: .json) }.joined()
            #expect(!everything.contains("sk-live-123"))
            #expect(!everything.contains("hunter2"))

            #expect(
                metrics.value(
                    "herald_http_requests_total",
                    labels: [("method", "GET"), ("route", "/items/{id}"), ("status", "200")]
                ) == 1
            )
            #expect(
                metrics.value(
                    "herald_http_requests_total",
                    labels: [("method", "GET"), ("route", "unmatched"), ("status", "404")]
                ) == 1
            )
            #expect(
                metrics.value(
                    "herald_http_request_duration_seconds",
                    labels: [("method", "GET"), ("route", "/items/{id}")]
                ) == 1
            )
        }
    }

    @Test("pipelined requests in one write are answered in order")
    func pipelining() async throws {
        try await withServer(responder: makeTestRouter()) { _, port in
            let connection = try await RawConnection.open(port: port)
            defer { connection.close() }
            try await connection.send(
                "GET /items/1 HTTP/1.1\r\nHost: x\r\n\r\n"
                    + "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\npong"
                    + "GET /items/3 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            )
            let first = try await connection.readResponse()
            let second = try await connection.readResponse()
            let third = try await connection.readResponse()
            #expect(try first.json()["id"] as? String == "1")
            #expect(second.text == "pong")
            #expect(try third.json()["id"] as? String == "3")
        }
    }

    @Test("large bodies pass through in both directions")
    func largeBodies() async throws {
        try await withServer(responder: makeTestRouter()) { _, port in
            let payload = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            let connection = try await RawConnection.open(port: port)
            defer { connection.close() }
            try await connection.send(
                Array("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: \(payload.count)\r\n\r\n".utf8) + payload
            )
            let response = try await connection.readResponse()
            #expect(response.status == 200)
            #expect(response.body == payload)
        }
    }

    @Test("many concurrent clients, some slow, are all answered")
    func concurrentClients() async throws {
        var router = makeTestRouter()
        router.get("/nap/{ms}") { request in
            try await Task.sleep(for: .milliseconds(Int(request.parameters["ms"]!)!))
            return .text(request.parameters["ms"]!)
        }
        try await withServer(responder: router) { server, port in
            try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<40 {
                    group.addTask {
                        let delay = index % 4 == 0 ? 100 : 0
                        let response = try await RawConnection.request(port: port, "GET", "/nap/\(delay)")
                        return response.status == 200 && response.text == String(delay)
                    }
                }
                var answered = 0
                for try await ok in group where ok { answered += 1 }
                #expect(answered == 40)
            }
            try await eventually("every request to be released") { server.statistics.liveContexts == 0 }
        }
    }

    @Test("cancelling run() closes in-flight requests and returns")
    func cancellation() async throws {
        let started = Gate()
        let gate = Gate()
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
