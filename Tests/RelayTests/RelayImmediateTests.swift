import APNs
import APNsSimulator
import Foundation
import HTTPTestSupport
import HeraldCore
import SocketTestSupport
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
            // No APNs connection yet: the push waits for one, in a task.
            let first = AnswerProbe { relay.service.relay(push(token, "first"), answer: $0) }
            #expect(first.atOnce == nil)
            #expect(first.tasksStarted == 1)
            #expect(try await first.answer()?.get().status == 202)
            _ = try await relay.deliveries(token: token)

            let direct = try #require(AnswerProbe { relay.service.relay(push(token, "second"), answer: $0) }.atOnce)
            #expect(direct.status == 202)
            #expect(try await relay.post("/push/\(token)/third").status == 202)
            #expect(relay.server.statistics.suspensions == 0)
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
            let unsupported = try #require(AnswerProbe(router, unsupportedRequest).atOnce)
            #expect(unsupported.status == 415)
            #expect(RouteLabel.loggedPath(of: unsupportedRequest, answeredWith: unsupported) == shortened)
            let get = HTTPRequest(method: "GET", path: "/push/\(token)/sub-1")
            let wrongMethod = try await router.respond(to: get)
            #expect(wrongMethod.status == 404)
            #expect(RouteLabel.loggedPath(of: get, answeredWith: wrongMethod) == shortened)
            // A refusal by the HTTP server itself (a body over its limit) is shown the same way.
            let upload = HTTPRequest(method: "POST", path: "/push/\(token)/sub-1")
            let refused = router.refused(
                upload,
                with: .error(status: 413, code: "body_too_large", message: "too large")
            )
            #expect(RouteLabel.loggedPath(of: upload, answeredWith: refused) == shortened)
            #expect(refused.route == "/push/{token}/{id}")
            // The first push waits for a connection (the asynchronous path), then is accepted.
            let accepted = try await router.respond(to: push(token, "sub-1"))
            #expect(accepted.status == 202)
            #expect(RouteLabel.loggedPath(of: push(token, "sub-1"), answeredWith: accepted) == shortened)
            // An escaped literal segment still matches the route, and the token is still shortened.
            let escaped = HTTPRequest(method: "GET", path: "/p%75sh/\(token)/sub-1")
            let escapedAnswer = try await router.respond(to: escaped)
            #expect(escapedAnswer.status == 404)
            #expect(escapedAnswer.route == "/push/{token}/{id}")
            #expect(RouteLabel.loggedPath(of: escaped, answeredWith: escapedAnswer) == shortened)
            // Other routes keep their paths, except that whole tokens are shortened there too.
            #expect(RouteLabel.loggedPath(of: get, answeredWith: HTTPResponse()) == shortened)
            let other = HTTPRequest(method: "GET", path: "/v1/notifications/sub-1")
            #expect(RouteLabel.loggedPath(of: other, answeredWith: HTTPResponse()) == "/v1/notifications/sub-1")
        }
    }

    @Test func badInputIsAnsweredAtOnceWithoutAConnection() async throws {
        try await RelayHarness.with { relay in
            let bad = try #require(AnswerProbe { relay.service.relay(push("not-hex", "x"), answer: $0) }.atOnce)
            #expect(bad.status == 400)
            let unsupported = try #require(
                AnswerProbe { relay.service.relay(push(randomToken(), "x", encoding: "gzip"), answer: $0) }.atOnce
            )
            #expect(unsupported.status == 415)
            #expect(try await relay.post("/push/\(randomToken())/x", headers: [:]).status == 415)
            #expect(relay.server.statistics.suspensions == 0)
        }
    }

    @Test func withAPNsDownTheRelayWaitsThenAnswers503() async throws {
        try await RelayHarness.with(apnsPort: try Loopback.freePort()) { relay in
            let token = randomToken()
            let probe = AnswerProbe { relay.service.relay(push(token, "down"), answer: $0) }
            #expect(probe.atOnce == nil)
            #expect(try await probe.answer()?.get().status == 503)
            let answer = try await relay.post("/push/\(token)/down")
            #expect(answer.status == 503)
            #expect(answer.headers["retry-after"] != nil)
        }
    }
}
