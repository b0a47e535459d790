import APNs
import APNsSimulator
import APNsTransport
import AsyncTestSupport
import Foundation
import HeraldCore
import HeraldCrypto
import SocketTestSupport
import Testing

/// Relay → the real APNs client → the simulator over HTTP/2 + TLS, checked field by field.
@Suite("Relay end to end", .serialized)
struct RelayEndToEndTests {
    func object(_ delivery: APNSSimulatorDelivery) throws -> [String: APNSJSONValue] {
        try #require(delivery.payloadJSON?.objectValue)
    }

    @Test func aes128gcmIsRelayedWithTheExactPayloadAndHeaders() async throws {
        try await RelayHarness.with { relay in
            let token = randomToken()
            let body = SecureRandom.bytes(200)
            let sentAt = Int64(Date().timeIntervalSince1970)
            let answer = try await relay.post(
                "/push/\(token.uppercased())/0FE8C1A6-4B7E-4F7A-9E2A-0D3C1B6A9F10",
                headers: ["Content-Encoding": "aes128gcm", "TTL": "600", "Urgency": "high", "Topic": "t1"],
                body: body
            )
            #expect(answer.status == 202)
            #expect(answer.body.isEmpty)
            let delivery = try #require(try await relay.deliveries(token: token).first)
            #expect(delivery.status == 200)
            #expect(delivery.topic == RelayHarness.topic)
            #expect(delivery.pushType == "alert")
            #expect(delivery.priority == 10)
            #expect(delivery.collapseID == "t1")
            // TTL 600 counts from when the relay took the push: between the post and now.
            let expiration = try #require(delivery.expiration)
            #expect((sentAt + 600)...(Int64(Date().timeIntervalSince1970) + 601) ~= expiration)
            #expect(delivery.apnsID?.count == 36)
            #expect(delivery.providerToken?.keyID == "RELAYKEY01")
            let payload = try object(delivery)
            #expect(payload.keys.sorted() == ["aps", "e", "i", "m"])
            #expect(payload["e"] == .string("aes128gcm"))
            #expect(payload["i"] == .string("0FE8C1A6-4B7E-4F7A-9E2A-0D3C1B6A9F10"))
            #expect(payload["m"] == .string(WebPushCrypto.urlSafeBase64(body)))
            let aps = try #require(payload["aps"]?.objectValue)
            #expect(aps["mutable-content"] == .integer(1))
            #expect(aps["alert"] == .object(["loc-key": .string("apns-default-message")]))
        }
    }

    @Test func aesgcmCarriesSaltAndKeyAndLowUrgencyIsPriority5() async throws {
        try await RelayHarness.with { relay in
            let token = randomToken()
            let answer = try await relay.post(
                "/push/\(token)/42",
                headers: [
                    "Content-Encoding": "aesgcm", "Encryption": "salt=c2FsdHNhbHQ; rs=4096",
                    "Crypto-Key": "dh=BDHkey_-1,p256ecdsa=BVapid", "TTL": "0", "Urgency": "very-low",
                ],
                body: [9, 9]
            )
            #expect(answer.status == 202)
            let delivery = try #require(try await relay.deliveries(token: token).first)
            #expect(delivery.priority == 5)
            #expect(delivery.expiration == 0)
            #expect(delivery.collapseID == nil)
            let payload = try object(delivery)
            #expect(payload["e"] == .string("aesgcm"))
            #expect(payload["s"] == .string("c2FsdHNhbHQ"))
            #expect(payload["k"] == .string("BDHkey_-1"))
            #expect(payload["i"] == .string("42"))
        }
    }

    @Test func sandboxGoesToTheSandboxEnvironmentOnlyForTrue() async throws {
        try await RelayHarness.with { relay in
            let token = randomToken()
            #expect(try await relay.post("/push/\(token)/a?sandbox=true").status == 202)
            #expect(try await relay.post("/push/\(token)/b?sandbox=yes").status == 202)
            _ = try await relay.deliveries(token: token, count: 2)
            // Both environments reach the same simulator here; the pool that carried each push
            // tells them apart.
            let sandbox = relay.pools[APNSEnvironment.allCases.firstIndex(of: .sandbox)!]
            let production = relay.pools[APNSEnvironment.allCases.firstIndex(of: .production)!]
            #expect(sandbox.status.openConnections == 1)
            #expect(production.status.openConnections == 1)
        }
    }

    @Test func badInputIsRefusedAndNothingIsSent() async throws {
        let metrics = MetricsRegistry()
        try await RelayHarness.with(metrics: metrics) { relay in
            let token = randomToken()
            let cases: [(String, [String: String], [UInt8], String, Int)] = [
                ("/push/\(token)/1", [:], [1], "POST", 415),
                ("/push/\(token)/1", ["Content-Encoding": "gzip"], [1], "POST", 415),
                ("/push/zz\(token.dropFirst(2))/1", ["Content-Encoding": "aes128gcm"], [1], "POST", 400),
                ("/push/\(token)/1", ["Content-Encoding": "aesgcm", "Crypto-Key": "dh=x"], [1], "POST", 400),
                ("/push/\(token)/%FF", ["Content-Encoding": "aes128gcm"], [1], "POST", 400),
                ("/push/\(token)/1", ["Content-Encoding": "aes128gcm"], Array(repeating: 7, count: 4097), "POST", 413),
                ("/push/\(token)/1", ["Content-Encoding": "aes128gcm"], [], "GET", 404),
                ("/push/\(token)/1/", ["Content-Encoding": "aes128gcm"], [1], "POST", 404),
                ("/push/\(token)", ["Content-Encoding": "aes128gcm"], [1], "POST", 404),
                ("/push/\(token)/1/extra", ["Content-Encoding": "aes128gcm"], [1], "POST", 404),
                ("/pushy", ["Content-Encoding": "aes128gcm"], [1], "POST", 404),
            ]
            for (path, headers, body, method, status) in cases {
                let answer = try await relay.post(path, headers: headers, body: body, method: method)
                #expect(answer.status == status, "\(method) \(path) \(headers)")
                #expect(answer.headers["content-type"]?.hasPrefix("application/json") == true)
                #expect(answer.body.contains("\"error\""))
            }
            #expect(try await relay.post("/", method: "GET").status == 200)
            #expect(try await relay.post("/", method: "HEAD").status == 200)
            #expect(relay.simulator.deliveries().isEmpty)
            #expect(
                metrics.value("herald_relay_requests_total", labels: [("encoding", "unknown"), ("status", "415")]) == 2
            )
        }
    }

    @Test func aBodyThatFitsWebPushButNotAPNsIsAcceptedAndNotSent() async throws {
        let metrics = MetricsRegistry()
        try await RelayHarness.with(metrics: metrics) { relay in
            let token = randomToken()
            let answer = try await relay.post("/push/\(token)/1", body: Array(repeating: 1, count: 4000))
            #expect(answer.status == 202)
            #expect(metrics.value("herald_relay_oversize_total") == 1)
            // A push sent afterwards arrives; the oversize one never did.
            #expect(try await relay.post("/push/\(token)/2", body: [1]).status == 202)
            let deliveries = try await relay.deliveries(token: token)
            #expect(deliveries.count == 1)
            #expect(try object(deliveries[0])["i"] == .string("2"))
        }
    }

    @Test func apnsRejectionsAreCountedByReason() async throws {
        let metrics = MetricsRegistry()
        try await RelayHarness.with(metrics: metrics) { relay in
            let token = randomToken()
            relay.simulator.setToken(
                APNSSimulatorTokenState(token: token, unregisteredAt: Date(timeIntervalSince1970: 1_700_000_000))
            )
            #expect(try await relay.post("/push/\(token)/1").status == 202)
            _ = try await relay.deliveries(token: token)
            try await eventually("the Unregistered answer to be counted") {
                metrics.value("herald_relay_apns_responses_total", labels: [("reason", "Unregistered")]) != nil
            }
            #expect(metrics.value("herald_relay_apns_responses_total", labels: [("reason", "Unregistered")]) == 1)
        }
    }

    @Test func withoutAPNsTheRelayAnswers503AndRecoversWithoutARestart() async throws {
        let port = try Loopback.freePort()
        try await RelayHarness.with(apnsPort: port) { relay in
            let token = randomToken()
            let down = try await relay.post("/push/\(token)/1")
            #expect(down.status == 503)
            #expect(down.headers["retry-after"] == "10")
            #expect(down.body.contains("apns_unavailable"))
            // Start a second simulator on the port the relay points at: the pool reconnects.
            var configuration = relay.simulator.configuration
            configuration.port = port
            let revived = try APNSSimulator(configuration: configuration)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await revived.run() }
                defer { revived.triggerGracefulShutdown() }
                try await eventually("the relay to accept pushes again", pollingEvery: .milliseconds(50)) {
                    try await relay.post("/push/\(token)/2").status == 202
                }
                try await eventually("the revived simulator to receive the push") { !revived.deliveries().isEmpty }
                #expect(revived.deliveries(APNSSimulatorDeliveryFilter(token: token)).count == 1)
            }
        }
    }
}
