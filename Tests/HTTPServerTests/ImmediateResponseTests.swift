import Foundation
import HTTPTestSupport
import HeraldCore
import Synchronization
import Testing

@testable import HTTPRouting
@testable import HTTPServer

/// A router whose routes answer at once, at once or from a task, and from a task (async).
private func makeImmediateRouter() -> Router {
    var router = Router()
    router.on(
        "GET",
        "/sync/{id}",
        answering: { request, answer in
            answer(.text("sync \(request.parameters["id"] ?? "")"))
        }
    )
    router.on(
        "POST",
        "/maybe",
        answering: { request, answer in
            guard request.headers["X-Wait"] != nil else { return answer(HTTPResponse(status: 202)) }
            answer.answer(by: { HTTPResponse(status: 201) })
        }
    )
    router.get("/async") { _ in .text("async") }
    router.get("/fails") { _ in throw HTTPError(status: 409, code: "conflict", message: "taken") }
    return router
}

/// Counts the requests it sees and answers nothing itself.
private struct CountingMiddleware: HTTPMiddleware {
    final class Calls: Sendable {
        let count = Mutex(0)
    }
    let calls: Calls

    func handle(_ request: HTTPRequest, answer: HTTPResponseSink, next: (HTTPRequest, HTTPResponseSink) -> Void) {
        calls.count.withLock { $0 += 1 }
        next(request, answer)
    }
}

@Suite("Immediate responses, in memory")
struct ImmediateResponseTests {
    @Test("a route answers at once when it can, from a task otherwise, and the same either way")
    func routeKinds() async throws {
        let router = makeImmediateRouter()

        let sync = AnswerProbe(router, HTTPRequest(path: "/sync/7"))
        let syncAnswer = try #require(sync.atOnce)
        #expect(syncAnswer.status == 200)
        #expect(String(decoding: syncAnswer.body, as: UTF8.self) == "sync 7")
        #expect(syncAnswer.route == "/sync/{id}")
        #expect(sync.tasksStarted == 0)
        #expect(try await router.respond(to: HTTPRequest(path: "/sync/7")).body == syncAnswer.body)

        #expect(AnswerProbe(router, HTTPRequest(method: "POST", path: "/maybe")).atOnce?.status == 202)
        let waiting = HTTPRequest(method: "POST", path: "/maybe", headers: ["X-Wait": "1"])
        let probe = AnswerProbe(router, waiting)
        #expect(probe.atOnce == nil)
        #expect(probe.tasksStarted == 1)
        #expect(try await probe.answer()?.get().status == 201)
        #expect(try await probe.answer()?.get().route == nil, "one answer only")
        #expect(try await router.respond(to: waiting).status == 201)

        let async = AnswerProbe(router, HTTPRequest(path: "/async"))
        #expect(async.atOnce == nil)
        let asyncAnswer = try #require(try await async.answer()?.get())
        #expect(asyncAnswer.status == 200)
        #expect(asyncAnswer.route == "/async")
    }

    @Test("an async handler's error reaches the sink labelled with its route")
    func asyncFailure() async throws {
        let failure = AnswerProbe(makeImmediateRouter(), HTTPRequest(path: "/fails"))
        guard case .failure(let error)? = await failure.answer() else {
            Issue.record("the handler's error was not passed on")
            return
        }
        #expect(error.route == "/fails")
        #expect((error.error as? HTTPError)?.status == 409)
        await #expect(throws: HTTPError.self) {
            try await makeImmediateRouter().respond(to: HTTPRequest(path: "/fails"))
        }
    }

    @Test("404, 405 and HEAD on a GET answered at once are answered at once, as respond() would")
    func errorsAndHead() async throws {
        let router = makeImmediateRouter()
        for (method, path) in [("GET", "/nowhere"), ("DELETE", "/sync/1"), ("GET", "/maybe")] {
            let request = HTTPRequest(method: method, path: path)
            let immediate = try #require(AnswerProbe(router, request).atOnce)
            let later = try await router.respond(to: request)
            #expect(immediate.status == later.status)
            #expect(immediate.body == later.body)
            #expect(immediate.headers["Allow"] == later.headers["Allow"])
        }
        #expect(AnswerProbe(router, HTTPRequest(method: "DELETE", path: "/sync/1")).atOnce?.status == 405)

        let head = try #require(AnswerProbe(router, HTTPRequest(method: "HEAD", path: "/sync/abc")).atOnce)
        #expect(head.status == 200)
        #expect(head.body.isEmpty)
        #expect(head.headers["Content-Length"] == "8")
    }

    @Test("the default middleware runs around every answer, when it comes")
    func defaultMiddleware() async throws {
        let metrics = MetricsRegistry()
        let chain = MiddlewareChain(
            middleware: HTTPServer.defaultMiddleware(logger: Logger(label: "test", level: .critical), metrics: metrics),
            responder: makeImmediateRouter()
        )
        let response = try #require(
            AnswerProbe(chain, HTTPRequest(path: "/sync/1", headers: ["X-Request-Id": "abc-1"])).atOnce
        )
        #expect(response.headers["X-Request-Id"] == "abc-1")
        #expect(
            metrics.value(
                "herald_http_requests_total",
                labels: [("method", "GET"), ("route", "/sync/{id}"), ("status", "200")]
            ) == 1
        )

        let waiting = AnswerProbe(chain, HTTPRequest(method: "POST", path: "/maybe", headers: ["X-Wait": "1"]))
        #expect(waiting.atOnce == nil)
        #expect(
            metrics.value(
                "herald_http_requests_total",
                labels: [("method", "POST"), ("route", "/maybe"), ("status", "201")]
            ) == nil
        )
        let answered = try #require(try await waiting.answer()?.get())
        #expect(answered.status == 201)
        #expect(answered.headers["X-Request-Id"] != nil)
        #expect(
            metrics.value(
                "herald_http_requests_total",
                labels: [("method", "POST"), ("route", "/maybe"), ("status", "201")]
            ) == 1
        )

        // A thrown error is mapped by the ErrorMiddleware and counted under its route.
        let failed = try #require(try await AnswerProbe(chain, HTTPRequest(path: "/fails")).answer()?.get())
        #expect(failed.status == 409)
        #expect(
            metrics.value(
                "herald_http_requests_total",
                labels: [("method", "GET"), ("route", "/fails"), ("status", "409")]
            ) == 1
        )
    }

    @Test("middleware sees every request once, answered at once or later")
    func middlewareSeesEveryRequest() async throws {
        let calls = CountingMiddleware.Calls()
        let chain = MiddlewareChain(middleware: [CountingMiddleware(calls: calls)], responder: makeImmediateRouter())
        #expect(AnswerProbe(chain, HTTPRequest(path: "/sync/1")).atOnce?.status == 200)
        #expect(try await chain.respond(to: HTTPRequest(path: "/async")).status == 200)
        #expect(calls.count.withLock { $0 } == 2)
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
