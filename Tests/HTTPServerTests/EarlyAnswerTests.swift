import Foundation
import HeraldCore
import Synchronization
import Testing

@testable import HTTPRouting
@testable import HTTPServer

/// 401, 404, 405 and 413 are decided on the request line and headers: the answer goes out
/// before any byte of the body is read (the tests send none, or only part), and the connection
/// then closes. The raw connection's reads time out after 10 s, long before the server's
/// 30 s idle timeout: a server waiting for the body fails the test instead of hanging it.
@Suite("Answers decided on the headers, before the body")
struct EarlyAnswerTests {
    /// Handler runs of the guarded upload route.
    final class Runs: Sendable {
        let count = Atomic<Int>(0)
    }

    static func router(runs: Runs = Runs()) -> Router {
        var router = makeTestRouter()
        router.on("POST", "/secure/upload", maxBodySize: 64 * 1024) { request in
            runs.count.add(1, ordering: .relaxed)
            return .text("got \(request.body.count)")
        }
        router.get("/secure/status") { _ in .text("fine") }
        router.admit(under: "/secure") { request in
            guard request.headers["Authorization"] != "Bearer good" else { return nil }
            var response = HTTPResponse.error(status: 401, code: "missing_api_key", message: "Send the key.")
            response.headers.replaceOrAdd(name: "WWW-Authenticate", value: "Bearer")
            return response
        }
        return router
    }

    /// Sends `head` (and `partialBody`, if any) and reads the answer; `closed` tells whether the
    /// server then closed the connection.
    static func answer(
        port: Int,
        _ head: String,
        partialBody: String = ""
    ) async throws -> (response: RawResponse, closed: Bool) {
        let connection = try await RawConnection.open(port: port, sending: head + partialBody)
        defer { connection.close() }
        let response = try await connection.readResponse()
        return (response, try await connection.waitForClose())
    }

    @Test("an unknown route is 404 without its body, even one over the server's limit")
    func notFound() async throws {
        try await withServer(responder: Self.router()) { _, port in
            let small = try await Self.answer(
                port: port,
                "POST /nowhere HTTP/1.1\r\nHost: x\r\nContent-Length: 500000\r\n\r\n"
            )
            #expect(small.response.status == 404)
            #expect(small.response.errorCode == "not_found")
            #expect(
                small.response.text
                    == #"{"error":{"code":"not_found","message":"nothing is served at /nowhere: check the path","#
                    + #""field":"path"}}"#
            )
            #expect(small.response.headers["Connection"]?.lowercased() == "close")
            #expect(small.closed)

            let partial = try await Self.answer(
                port: port,
                "PUT /nowhere/else HTTP/1.1\r\nHost: x\r\nContent-Length: 900000\r\n\r\n",
                partialBody: String(repeating: "p", count: 1000)
            )
            #expect(partial.response.status == 404)
            #expect(partial.closed)

            // Route first, size second: no 413 for a route that does not exist.
            let huge = try await Self.answer(
                port: port,
                "POST /nowhere HTTP/1.1\r\nHost: x\r\nContent-Length: 5000000\r\n\r\n"
            )
            #expect(huge.response.status == 404)
            #expect(huge.closed)
        }
    }

    @Test("a known path with another method is 405 with Allow, without its body")
    func methodNotAllowed() async throws {
        try await withServer(responder: Self.router()) { _, port in
            let chunked = try await Self.answer(
                port: port,
                "PUT /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
                partialBody: "10\r\n0123"
            )
            #expect(chunked.response.status == 405)
            #expect(chunked.response.headers["Allow"] == "POST")
            #expect(chunked.closed)

            let declared = try await Self.answer(
                port: port,
                "PATCH /items/1 HTTP/1.1\r\nHost: x\r\nContent-Length: 400000\r\n\r\n"
            )
            #expect(declared.response.status == 405)
            #expect(declared.closed)
        }
    }

    @Test("a route's admission check answers 401 before the body, and before the size is judged")
    func unauthorized() async throws {
        let runs = Runs()
        try await withServer(responder: Self.router(runs: runs)) { _, port in
            let within = try await Self.answer(
                port: port,
                "POST /secure/upload HTTP/1.1\r\nHost: x\r\nContent-Length: 60000\r\n\r\n"
            )
            #expect(within.response.status == 401)
            #expect(within.response.errorCode == "missing_api_key")
            #expect(within.response.headers["WWW-Authenticate"] == "Bearer")
            #expect(within.closed)

            // Over the route's limit too: without the key, the client learns nothing of limits.
            let over = try await Self.answer(
                port: port,
                "POST /secure/upload HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer bad\r\nContent-Length: 900000\r\n\r\n",
                partialBody: "{"
            )
            #expect(over.response.status == 401)
            #expect(over.closed)

            // Every route under the prefix is guarded, bodiless GETs included (kept alive).
            let status = try await RawConnection.request(port: port, "GET", "/secure/status")
            #expect(status.status == 401)

            let admitted = try await RawConnection.request(
                port: port,
                "POST",
                "/secure/upload",
                headers: [("Authorization", "Bearer good")],
                body: "hello"
            )
            #expect(admitted.status == 200)
            #expect(admitted.text == "got 5")
        }
        #expect(runs.count.load(ordering: .relaxed) == 1)
    }

    @Test("an admitted request over its route's limit is 413 before the body, then closed")
    func tooLarge() async throws {
        try await withServer(responder: Self.router()) { _, port in
            let over = try await Self.answer(
                port: port,
                "POST /secure/upload HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer good\r\nContent-Length: 70000\r\n\r\n"
            )
            #expect(over.response.status == 413)
            #expect(over.response.errorCode == "body_too_large")
            let error = (try over.response.json())["error"] as? [String: Any]
            #expect(error?["field"] as? String == "body")
            #expect((error?["message"] as? String)?.contains("the most this route takes: send a smaller one") == true)
            #expect(over.closed)
        }
    }

    /// The admission check finds who the request comes from once, on the headers; the handler
    /// reads it after the body arrives, and the check does not run a second time.
    @Test("who the admission check found reaches the handler, checked once")
    func principalReachesTheHandler() async throws {
        let checks = Runs()
        var router = makeTestRouter()
        router.on("POST", "/who", maxBodySize: 1024) { request in
            .text("\(request.principal as? String ?? "nobody") sent \(request.body.count)")
        }
        router.admit(under: "/who") { request in
            checks.count.add(1, ordering: .relaxed)
            guard let name = request.headers["X-Name"] else { return HTTPResponse(status: 401) }
            request.principal = name
            return nil
        }
        try await withServer(responder: router) { _, port in
            let connection = try await RawConnection.open(
                port: port,
                sending: "POST /who HTTP/1.1\r\nHost: x\r\nX-Name: ann\r\nContent-Length: 3\r\n\r\nabc"
            )
            defer { connection.close() }
            let response = try await connection.readResponse()
            #expect(response.status == 200)
            #expect(String(decoding: response.body, as: UTF8.self) == "ann sent 3")
            #expect(checks.count.load(ordering: .relaxed) == 1)
        }
        // In memory, without a server, the router runs the check and hands on what it found.
        let local = try await router.respond(to: HTTPRequest(method: "POST", path: "/who", headers: ["X-Name": "bo"]))
        #expect(String(decoding: local.body, as: UTF8.self) == "bo sent 0")
    }

    @Test("a router run without a server applies its admission checks too")
    func routerAppliesAdmission() async throws {
        let router = Self.router()
        let refused = try await router.respond(to: HTTPRequest(method: "POST", path: "/secure/upload", body: [1]))
        #expect(refused.status == 401)
        #expect(refused.route == "/secure/upload")
        guard case .answer(let answer) = router.admit(HTTPRequest(method: "GET", path: "/secure/status")) else {
            Issue.record("admit let an unauthenticated request in")
            return
        }
        #expect(answer.status == 401)
        guard case .readBody(let limit, _) = router.admit(HTTPRequest(method: "POST", path: "/echo")) else {
            Issue.record("admit refused an open route")
            return
        }
        #expect(limit == nil)
    }
}
