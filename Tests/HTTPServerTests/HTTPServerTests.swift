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

/// Routing and error bodies; the suite's limits, connection, lifecycle and access-log tests are
/// in the `HTTPServer*Tests.swift` extensions beside this file.
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
}
