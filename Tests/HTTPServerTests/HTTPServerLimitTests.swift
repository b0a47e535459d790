import AsyncTestSupport
import Foundation
import HeraldCore
import Testing

@testable import HTTPRouting
@testable import HTTPServer

// Limits on what a request may carry, and what the server answers when one is exceeded.
extension HTTPServerLiveTests {
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

    @Test("body over maxBodySize with Content-Length: 413 before the body is read, naming the setting")
    func bodyTooLargeContentLength() async throws {
        let configure = { (configuration: inout HTTPServer.Configuration) in
            configuration.maxBodySize = 1024
            configuration.maxBodySizeSetting = "HERALD_MAX_BODY_BYTES"
        }
        try await withServer(configure: configure, responder: makeTestRouter()) { _, port in
            let connection = try await RawConnection.open(port: port)
            defer { connection.close() }
            // Only the headers are sent: the answer must not wait for the 10 MB body.
            try await connection.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000\r\n\r\n")
            let response = try await connection.readResponse()
            #expect(response.status == 413)
            #expect(response.errorCode == "body_too_large")
            // The one error format: what to fix, the part of the request at fault, the setting.
            #expect(
                response.text
                    == #"{"error":{"code":"body_too_large","message":"the request body is larger than 1024 bytes, "#
                    + #"the most HERALD_MAX_BODY_BYTES allows: send a smaller one (or raise HERALD_MAX_BODY_BYTES)","#
                    + #""field":"body"}}"#
            )

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
}
