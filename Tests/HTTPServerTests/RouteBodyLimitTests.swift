import HTTPRouting
import HTTPServer
import HeraldCore
import Testing

/// A route can accept larger (or smaller) bodies than the server's limit, decided before any
/// byte of the body is kept.
@Suite("Per-route body limits")
struct RouteBodyLimitTests {
    static func router() -> Router {
        var router = makeTestRouter()
        router.on("POST", "/bulk/{id}", maxBodySize: 8_192) { request in
            HTTPResponse(status: 200, body: Array(String(request.body.count).utf8))
        }
        router.on("POST", "/tiny", maxBodySize: 16) { _ in HTTPResponse(status: 204) }
        return router
    }

    @Test func aRouteWithItsOwnLimitTakesBodiesTheServerWouldRefuse() async throws {
        try await withServer(configure: { $0.maxBodySize = 1_024 }, responder: Self.router()) { _, port in
            let bulk = try await RawConnection.request(
                port: port,
                "POST",
                "/bulk/7",
                body: String(repeating: "x", count: 8_192)
            )
            #expect(bulk.status == 200)
            #expect(String(decoding: bulk.body, as: UTF8.self) == "8192")

            let elsewhere = try await RawConnection.request(
                port: port,
                "POST",
                "/echo",
                body: String(repeating: "x", count: 2_048)
            )
            #expect(elsewhere.status == 413)

            let tiny = try await RawConnection.request(
                port: port,
                "POST",
                "/tiny",
                body: String(repeating: "x", count: 17)
            )
            #expect(tiny.status == 413)
            #expect(String(decoding: tiny.body, as: UTF8.self).contains("16"))
        }
    }

    @Test func aRouteLimitHoldsForDeclaredAndChunkedBodies() async throws {
        try await withServer(configure: { $0.maxBodySize = 1_024 }, responder: Self.router()) { _, port in
            let declared = try await RawConnection.open(port: port)
            defer { declared.close() }
            try await declared.send("POST /bulk/1 HTTP/1.1\r\nHost: x\r\nContent-Length: 8193\r\n\r\n")
            let refused = try await declared.readResponse()
            #expect(refused.status == 413)
            #expect(String(decoding: refused.body, as: UTF8.self).contains("8192"))

            let chunked = try await RawConnection.open(port: port)
            defer { chunked.close() }
            var request = "POST /bulk/2 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            for _ in 0..<9 { request += "3e8\r\n" + String(repeating: "z", count: 1_000) + "\r\n" }
            request += "0\r\n\r\n"
            try await chunked.send(request)
            #expect(try await chunked.readResponse().status == 413)
        }
    }

    @Test func theRouterReportsTheLimitOfTheRouteARequestWouldReach() {
        let router = Self.router()
        #expect(router.maximumBodySize(method: "POST", rawPath: "/bulk/abc") == 8_192)
        #expect(router.maximumBodySize(method: "GET", rawPath: "/bulk/abc") == nil)
        #expect(router.maximumBodySize(method: "POST", rawPath: "/echo") == nil)
        let chain = MiddlewareChain(middleware: [], responder: router)
        guard case .readBody(let limit, _) = chain.admit(HTTPRequest(method: "POST", path: "/tiny")) else {
            Issue.record("POST /tiny was refused on its headers")
            return
        }
        #expect(limit == 16)
    }
}
