import APNs
import APNsSimulator
import Foundation
import HeraldCore
import Testing

@testable import HTTPRouting
@testable import HTTPServer
@testable import Relay

/// The relay answers on the HTTP server's I/O thread when it need not wait, and only then.
@Suite("Relay immediate answers", .serialized)
struct RelayImmediateTests {
    private func push(_ token: String, _ id: String, encoding: String = "aes128gcm") -> HTTPRequest {
        HTTPRequest(
            method: "POST",
            path: "/push/\(token)/\(id)",
            headers: HTTPHeaders([("Content-Encoding", encoding)]),
            body: [1, 2, 3]
        )
    }

    @Test func theFirstPushWaitsForAConnectionAndLaterOnesAreAnsweredAtOnce() async throws {
        let metrics = MetricsRegistry()
        try await RelayHarness.with(metrics: metrics) { relay in
            let token = randomToken()
            // No APNs connection yet: nothing decided, nothing counted, nothing sent.
            #expect(relay.service.relayImmediately(push(token, "first")) == nil)
            #expect(
                metrics.value("herald_relay_requests_total", labels: [("encoding", "aes128gcm"), ("status", "202")])
                    == nil
            )
            #expect(relay.simulator.deliveries(APNSSimulatorDeliveryFilter(token: token)).isEmpty)

            #expect(try await relay.post("/push/\(token)/first").status == 202)
            _ = try await relay.deliveries(token: token)
            #expect(relay.server.statistics.suspensions == 1)

            let direct = try #require(relay.service.relayImmediately(push(token, "second")))
            #expect(direct.status == 202)
            #expect(try await relay.post("/push/\(token)/third").status == 202)
            #expect(relay.server.statistics.suspensions == 1)
            let delivered = try await relay.deliveries(token: token, count: 3)
            #expect(delivered.count == 3)
            #expect(
                metrics.value("herald_relay_requests_total", labels: [("encoding", "aes128gcm"), ("status", "202")])
                    == 3
            )
        }
    }

    @Test func theAccessLogIsGivenThePathWithTheTokenShortened() async throws {
        try await RelayHarness.with { relay in
            var router = Router()
            relay.service.register(on: &router)
            let token = randomToken()
            let shortened = "/push/\(token.prefix(8))…/sub-1"
            let unsupportedRequest = push(token, "sub-1", encoding: "gzip")
            let unsupported = try #require(router.respondImmediately(to: unsupportedRequest))
            #expect(unsupported.status == 415)
            #expect(RouteRecorder.loggedPath(of: unsupportedRequest, answeredWith: unsupported) == shortened)
            let get = HTTPRequest(method: "GET", path: "/push/\(token)/sub-1")
            let wrongMethod = try await router.respond(to: get)
            #expect(wrongMethod.status == 404)
            #expect(RouteRecorder.loggedPath(of: get, answeredWith: wrongMethod) == shortened)
            // A refusal by the HTTP server itself (a body over its limit) is shown the same way.
            let upload = HTTPRequest(method: "POST", path: "/push/\(token)/sub-1")
            let refused = router.refused(
                upload,
                with: .error(status: 413, code: "body_too_large", message: "too large")
            )
            #expect(RouteRecorder.loggedPath(of: upload, answeredWith: refused) == shortened)
            #expect(refused.route == "/push/{token}/{id}")
            // The first push waits for a connection (the asynchronous path), then is accepted.
            let accepted = try await router.respond(to: push(token, "sub-1"))
            #expect(accepted.status == 202)
            #expect(RouteRecorder.loggedPath(of: push(token, "sub-1"), answeredWith: accepted) == shortened)
            // An escaped literal segment still matches the route, and the token is still shortened.
            let escaped = HTTPRequest(method: "GET", path: "/p%75sh/\(token)/sub-1")
            let escapedAnswer = try await router.respond(to: escaped)
            #expect(escapedAnswer.status == 404)
            #expect(escapedAnswer.route == "/push/{token}/{id}")
            #expect(RouteRecorder.loggedPath(of: escaped, answeredWith: escapedAnswer) == shortened)
            // Other routes keep their paths, except that whole tokens are shortened there too.
            #expect(RouteRecorder.loggedPath(of: get, answeredWith: HTTPResponse()) == shortened)
            let other = HTTPRequest(method: "GET", path: "/v1/notifications/sub-1")
            #expect(RouteRecorder.loggedPath(of: other, answeredWith: HTTPResponse()) == "/v1/notifications/sub-1")
        }
    }

    @Test func badInputIsAnsweredAtOnceWithoutAConnection() async throws {
        try await RelayHarness.with { relay in
            let bad = try #require(relay.service.relayImmediately(push("not-hex", "x")))
            #expect(bad.status == 400)
            let unsupported = try #require(relay.service.relayImmediately(push(randomToken(), "x", encoding: "gzip")))
            #expect(unsupported.status == 415)
            #expect(try await relay.post("/push/\(randomToken())/x", headers: [:]).status == 415)
            #expect(relay.server.statistics.suspensions == 0)
        }
    }

    @Test func withAPNsDownTheRelayWaitsThenAnswers503() async throws {
        try await RelayHarness.with(apnsPort: try freePort()) { relay in
            let token = randomToken()
            #expect(relay.service.relayImmediately(push(token, "down")) == nil)
            let answer = try await relay.post("/push/\(token)/down")
            #expect(answer.status == 503)
            #expect(answer.headers["retry-after"] != nil)
        }
    }
}
