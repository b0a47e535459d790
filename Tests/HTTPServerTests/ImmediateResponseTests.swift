import Foundation
import HeraldCore
import Synchronization
import Testing

@testable import HTTPRouting
@testable import HTTPServer

/// A router with one route of each kind: synchronous, immediate-or-async, async only.
private func makeImmediateRouter() -> Router {
    var router = Router()
    router.on("GET", "/sync/{id}", immediately: { request in .text("sync \(request.parameters["id"] ?? "")") })
    router.on(
        "POST",
        "/maybe",
        immediately: { request in
            request.headers["X-Wait"] == nil ? HTTPResponse(status: 202) : nil
        },
        otherwise: { _ in HTTPResponse(status: 201) }
    )
    router.get("/async") { _ in .text("async") }
    return router
}

/// Counts the asynchronous calls it sees and never answers immediately (the protocol default).
private struct AsyncOnlyMiddleware: HTTPMiddleware {
    final class Calls: Sendable {
        let count = Mutex(0)
    }
    let calls: Calls

    func handle(
        _ request: HTTPRequest,
        next: @Sendable (HTTPRequest) async throws -> HTTPResponse
    ) async throws -> HTTPResponse {
        calls.count.withLock { $0 += 1 }
        return try await next(request)
    }
}

@Suite("Immediate responses, in memory")
struct ImmediateResponseTests {
    @Test("each route kind answers immediately or not, and the async path always answers")
    func routeKinds() async throws {
        let router = makeImmediateRouter()

        let sync = try #require(router.respondImmediately(to: HTTPRequest(path: "/sync/7")))
        #expect(sync.status == 200)
        #expect(String(decoding: sync.body, as: UTF8.self) == "sync 7")
        #expect(sync.route == "/sync/{id}")
        #expect(try await router.respond(to: HTTPRequest(path: "/sync/7")).body == sync.body)

        #expect(router.respondImmediately(to: HTTPRequest(method: "POST", path: "/maybe"))?.status == 202)
        let waiting = HTTPRequest(method: "POST", path: "/maybe", headers: ["X-Wait": "1"])
        #expect(router.respondImmediately(to: waiting) == nil)
        #expect(try await router.respond(to: waiting).status == 201)
        #expect(try await router.respond(to: HTTPRequest(method: "POST", path: "/maybe")).status == 201)

        #expect(router.respondImmediately(to: HTTPRequest(path: "/async")) == nil)
        #expect(try await router.respond(to: HTTPRequest(path: "/async")).status == 200)
    }

    @Test("404, 405 and HEAD on an immediate GET are answered immediately, as respond() would")
    func errorsAndHead() async throws {
        let router = makeImmediateRouter()
        for (method, path) in [("GET", "/nowhere"), ("DELETE", "/sync/1"), ("GET", "/maybe")] {
            let request = HTTPRequest(method: method, path: path)
            let immediate = try #require(router.respondImmediately(to: request))
            let later = try await router.respond(to: request)
            #expect(immediate.status == later.status)
            #expect(immediate.body == later.body)
            #expect(immediate.headers["Allow"] == later.headers["Allow"])
        }
        #expect(router.respondImmediately(to: HTTPRequest(method: "DELETE", path: "/sync/1"))?.status == 405)

        let head = try #require(router.respondImmediately(to: HTTPRequest(method: "HEAD", path: "/sync/abc")))
        #expect(head.status == 200)
        #expect(head.body.isEmpty)
        #expect(head.headers["Content-Length"] == "8")
    }

    @Test("the default middleware runs around immediate answers; a declined request records nothing")
    func defaultMiddleware() throws {
        let metrics = MetricsRegistry()
        let chain = MiddlewareChain(
            middleware: HTTPServer.defaultMiddleware(logger: Logger(label: "test", level: .critical), metrics: metrics),
            responder: makeImmediateRouter()
        )
        let response = try #require(
            chain.respondImmediately(to: HTTPRequest(path: "/sync/1", headers: ["X-Request-Id": "abc-1"]))
        )
        #expect(response.headers["X-Request-Id"] == "abc-1")
        #expect(
            metrics.value(
                "herald_http_requests_total",
                labels: [("method", "GET"), ("route", "/sync/{id}"), ("status", "200")]
            ) == 1
        )

        #expect(chain.respondImmediately(to: HTTPRequest(path: "/async")) == nil)
        #expect(
            chain.respondImmediately(to: HTTPRequest(method: "POST", path: "/maybe", headers: ["X-Wait": "1"])) == nil
        )
        #expect(
            metrics.value(
                "herald_http_requests_total",
                labels: [("method", "GET"), ("route", "/async"), ("status", "200")]
            ) == nil
        )
        #expect(
            metrics.value(
                "herald_http_requests_total",
                labels: [("method", "POST"), ("route", "/maybe"), ("status", "201")]
            ) == nil
        )
    }

    @Test("a middleware without an immediate form sends every request down the async path")
    func asyncOnlyMiddleware() async throws {
        let calls = AsyncOnlyMiddleware.Calls()
        let chain = MiddlewareChain(middleware: [AsyncOnlyMiddleware(calls: calls)], responder: makeImmediateRouter())
        #expect(chain.respondImmediately(to: HTTPRequest(path: "/sync/1")) == nil)
        #expect(try await chain.respond(to: HTTPRequest(path: "/sync/1")).status == 200)
        #expect(calls.count.withLock { $0 } == 1)
    }
}

@Suite("Immediate responses, live on a loopback port")
struct ImmediateResponseLiveTests {
    @Test("immediate answers never suspend the connection; declined ones are answered by a task")
    func suspensions() async throws {
        let logs = CapturingLogHandler()
        let logger = Logger(label: "test.http", level: .info, handler: logs)
        let metrics = MetricsRegistry()
        try await withServer(responder: makeImmediateRouter(), logger: logger, metrics: metrics) { server, port in
            let sync = try await RawConnection.request(
                port: port,
                "GET",
                "/sync/a%20b",
                headers: [("X-Request-Id", "r-1")]
            )
            #expect(sync.status == 200)
            #expect(sync.text == "sync a b")
            #expect(sync.headers["X-Request-Id"] == "r-1")
            #expect(try await RawConnection.request(port: port, "GET", "/missing").status == 404)
            #expect(try await RawConnection.request(port: port, "POST", "/maybe", body: "x").status == 202)
            #expect(server.statistics.suspensions == 0)

            #expect(
                try await RawConnection.request(port: port, "POST", "/maybe", headers: [("X-Wait", "1")], body: "x")
                    .status == 201
            )
            #expect(try await RawConnection.request(port: port, "GET", "/async").status == 200)
            #expect(server.statistics.suspensions == 2)

            let lines = logs.all.filter { $0.message == "request" }
            #expect(lines.count == 5)
            let first = try #require(lines.first { logs.metadata($0)["request_id"] == .string("r-1") })
            #expect(logs.metadata(first)["route"] == .string("/sync/{id}"))
            #expect(
                metrics.value(
                    "herald_http_requests_total",
                    labels: [("method", "POST"), ("route", "/maybe"), ("status", "202")]
                ) == 1
            )
            #expect(
                metrics.value(
                    "herald_http_requests_total",
                    labels: [("method", "POST"), ("route", "/maybe"), ("status", "201")]
                ) == 1
            )
        }
    }

    @Test("keep-alive and pipelining mix immediate and suspended answers in order")
    func mixedPipeline() async throws {
        try await withServer(responder: makeImmediateRouter()) { _, port in
            let connection = try await RawConnection.open(port: port)
            defer { connection.close() }
            try await connection.send(
                "GET /sync/1 HTTP/1.1\r\nHost: x\r\n\r\n" + "GET /async HTTP/1.1\r\nHost: x\r\n\r\n"
                    + "GET /sync/2 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            )
            #expect(try await connection.readResponse().text == "sync 1")
            #expect(try await connection.readResponse().text == "async")
            #expect(try await connection.readResponse().text == "sync 2")
        }
    }
}
