import APNs
import APNsSimulator
import APNsTransport
import Foundation
import HTTP2
import HeraldCore
import Testing

/// Device pushes sent by the project's client (``APNSClient`` on an ``APNSConnectionPool``) over
/// HTTP/2 and TLS to a running simulator.
@Suite struct DevicePushTests {
    static let token = SimulatorFixture.token

    static func alert(
        token: String = DevicePushTests.token,
        topic: String = SimulatorFixture.bundleID,
        id: UUID = UUID()
    ) throws -> APNSRequest {
        try APNSRequest(
            deviceToken: token,
            pushType: .alert,
            topic: .bundleID(topic),
            payload: APNSAlertPayload(alert: APNSAlert(title: "Hello", body: "World")),
            id: id,
            collapseID: "greeting"
        )
    }

    @Test func aValidPushIsDeliveredAndRecorded() async throws {
        try await withSimulator { fixture in
            let (client, pool) = fixture.makeClient()
            let id = UUID()
            let result = try await client.send(try Self.alert(id: id))
            guard case .delivered(let delivery) = result else {
                Issue.record("not delivered: \(result)")
                return
            }
            #expect(delivery.apnsID == id)
            #expect(delivery.uniqueID.map { UUID(uuidString: $0) != nil } == true)

            let recorded = try #require(fixture.simulator.deliveries().first)
            #expect(recorded.status == 200)
            #expect(recorded.reason == nil)
            #expect(recorded.kind == .device)
            #expect(recorded.token == Self.token)
            #expect(recorded.topic == SimulatorFixture.bundleID)
            #expect(recorded.pushType == "alert")
            #expect(recorded.priority == 10)
            #expect(recorded.collapseID == "greeting")
            #expect(recorded.apnsID == id.uuidString.lowercased())
            #expect(recorded.providerToken?.keyID == fixture.key.keyID)
            #expect(recorded.providerToken?.teamID == fixture.key.teamID)
            #expect(recorded.providerToken?.issuedAt == Int64(fixture.clock.now().timeIntervalSince1970))
            #expect(recorded.payloadJSON?["aps"]?["alert"]?["title"] == "Hello")
            await pool.shutdown()
        }
    }

    @Test func everyPushTypeReachesItsTopic() async throws {
        try await withSimulator { fixture in
            let (client, pool) = fixture.makeClient()
            let payloads: [APNSPushType: String] = [
                .background: #"{"aps":{"content-available":1}}"#,
                .liveActivity: #"{"aps":{"event":"update","timestamp":1,"content-state":{}}}"#,
                .widgets: #"{"aps":{"content-changed":true}}"#,
                .controls: #"{"aps":{"content-changed":true}}"#,
            ]
            for type in APNSPushType.allCases where type != .mdm {
                let request = APNSRequest(
                    deviceToken: Self.token,
                    pushType: type,
                    topic: .bundleID(SimulatorFixture.bundleID),
                    payload: Array((payloads[type] ?? #"{"aps":{"alert":"x"}}"#).utf8)
                )
                let answer = try await client.send(request).answer
                #expect(answer.status == 200, "\(type): \(answer)")
            }
            let recorded = fixture.simulator.deliveries(.init(pushType: "voip"))
            #expect(recorded.map(\.topic) == ["com.example.app.voip"])
            await pool.shutdown()
        }
    }

    @Test func anAppTheSimulatorDoesNotServeIsTopicDisallowed() async throws {
        try await withSimulator { fixture in
            let (client, pool) = fixture.makeClient()
            let answer = try await client.send(try Self.alert(topic: "com.example.other")).answer
            #expect(answer.status == 400)
            #expect(answer.reason == "TopicDisallowed")
            await pool.shutdown()
        }
    }

    @Test func aTokenOfAnotherAppIsDeviceTokenNotForTopic() async throws {
        try await withSimulator(topics: ["com.example.app", "com.example.other"]) { fixture in
            fixture.simulator.setToken(APNSSimulatorTokenState(token: Self.token, topic: "com.example.other"))
            let (client, pool) = fixture.makeClient()
            let answer = try await client.send(try Self.alert()).answer
            #expect(answer.status == 400)
            #expect(answer.reason == "DeviceTokenNotForTopic")
            let result = try await client.send(try Self.alert(topic: "com.example.other"))
            #expect(result.isDelivered)
            await pool.shutdown()
        }
    }

    @Test func anUnregisteredTokenIs410WithItsTimestamp() async throws {
        try await withSimulator { fixture in
            let since = Date(timeIntervalSince1970: 1_760_000_000.250)
            fixture.simulator.setToken(APNSSimulatorTokenState(token: Self.token, unregisteredAt: since))
            let (client, pool) = fixture.makeClient()
            let result = try await client.send(try Self.alert())
            let rejection = try #require(result.rejection)
            #expect(rejection.status == 410)
            #expect(rejection.reason == .unregistered)
            #expect(rejection.deviceTokenInvalidSince == since)
            #expect(fixture.simulator.deliveries().first?.timestamp == since)
            await pool.shutdown()
        }
    }

    @Test func aTokenOlderThanAnHourIsExpiredProviderToken() async throws {
        try await withSimulator { fixture in
            // The client stamps iat from a clock two hours behind the simulator's.
            let (client, pool) = fixture.makeClient(clock: TestClock(fixture.clock.now().addingTimeInterval(-7200)))
            let answer = try await client.send(try Self.alert()).answer
            #expect(answer.status == 403)
            #expect(answer.reason == "ExpiredProviderToken")
            await pool.shutdown()
        }
    }

    @Test func aKeyTheSimulatorDoesNotKnowIsInvalidProviderToken() async throws {
        try await withSimulator { fixture in
            let (client, pool) = fixture.makeClient(key: try makeSigningKey())
            let answer = try await client.send(try Self.alert()).answer
            #expect(answer.status == 403)
            #expect(answer.reason == "InvalidProviderToken")
            #expect(fixture.simulator.deliveries().first?.providerToken?.keyID == "OTHERKEY01")
            await pool.shutdown()
        }
    }

    @Test func aSecondTokenOnOneConnectionWithinTwentyMinutesIsTooManyUpdates() async throws {
        try await withSimulator { fixture in
            let (first, pool) = fixture.makeClient()
            #expect(try await first.send(try Self.alert()).isDelivered)
            // Another token manager for the same key, on a clock a second ahead, signs its own
            // token; same pool, so same connection.
            let ahead = TestClock(fixture.clock.now().addingTimeInterval(1))
            let second = APNSClient(
                transport: pool,
                credentials: .token(fixture.key),
                retryPolicy: .never,
                clock: ahead
            )
            let answer = try await second.send(try Self.alert()).answer
            #expect(answer.status == 429)
            #expect(answer.reason == "TooManyProviderTokenUpdates")
            #expect(try await first.send(try Self.alert()).isDelivered)
            fixture.clock.advance(by: 20 * 60)
            ahead.advance(by: 20 * 60)
            #expect(try await second.send(try Self.alert()).isDelivered)
            await pool.shutdown()
        }
    }

    @Test func concurrentPushesUseTheRaisedStreamLimit() async throws {
        try await withSimulator { fixture in
            let (client, pool) = fixture.makeClient()
            #expect(try await client.send(try Self.alert()).isDelivered)
            let delivered = try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<200 {
                    let token = String(format: "%064x", index)
                    group.addTask { try await client.send(try Self.alert(token: token)).isDelivered }
                }
                var count = 0
                for try await ok in group where ok { count += 1 }
                return count
            }
            #expect(delivered == 200)
            #expect(fixture.simulator.deliveries(.init(status: 200, limit: 1000)).count == 201)
            await pool.shutdown()
        }
    }
}
