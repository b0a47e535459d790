import AsyncTestSupport
import Foundation
import HeraldCore
import Testing

@testable import HTTPRouting
@testable import HTTPServer

// The access log and the request metrics.
extension HTTPServerLiveTests {
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
}
