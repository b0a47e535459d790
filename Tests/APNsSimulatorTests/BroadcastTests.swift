import APNs
import APNsSimulator
import APNsTransport
import Foundation
import HTTP2
import HeraldCore
import Testing

/// Broadcast channels and broadcasts, through the project's client and raw where it refuses.
@Suite struct BroadcastTests {
    static let bundleID = SimulatorFixture.bundleID

    static func update(
        _ channel: APNSChannelID,
        policy: APNSChannelMessageStoragePolicy,
        expiration: APNSExpiration = .immediately
    )
        throws -> APNSBroadcastRequest
    {
        try APNSBroadcastRequest(
            bundleID: bundleID,
            channelID: channel,
            storagePolicy: policy,
            payload: APNSLiveActivityPayload.update(contentState: ["score": "2-1"], timestamp: Date()),
            expiration: expiration,
            priority: .consideringDevicePower
        )
    }

    @Test func channelsAreCreatedReadListedAndDeleted() async throws {
        try await withSimulator { fixture in
            let (client, pool) = fixture.makeClient()
            let first = try await client.createChannel(bundleID: Self.bundleID, storagePolicy: .noMessageStored)
            let second = try await client.createChannel(
                bundleID: Self.bundleID,
                storagePolicy: .mostRecentMessageStored
            )
            #expect(first != second)
            #expect(try first.validate() == ())
            let read = try await client.channelConfiguration(bundleID: Self.bundleID, channelID: second)
            #expect(read.storagePolicy == .mostRecentMessageStored)
            #expect(read.pushType == "LiveActivity")
            #expect(try await client.allChannels(bundleID: Self.bundleID) == [first, second])
            try await client.deleteChannel(bundleID: Self.bundleID, channelID: first)
            #expect(try await client.allChannels(bundleID: Self.bundleID) == [second])
            await #expect {
                try await client.channelConfiguration(bundleID: Self.bundleID, channelID: first)
            } throws: { error in
                (error as? APNSRejection)?.reason == .channelNotRegistered
            }
            #expect(fixture.simulator.channels().map(\.channelID) == [second.rawValue])
            await pool.shutdown()
        }
    }

    @Test func theChannelLimitIsCannotCreateChannelConfig() async throws {
        #expect(APNSSimulator.Configuration().channelLimit == 10_000)
        try await withSimulator(configure: { $0.channelLimit = 2 }) { fixture in
            let (client, pool) = fixture.makeClient()
            _ = try await client.createChannel(bundleID: Self.bundleID, storagePolicy: .noMessageStored)
            _ = try await client.createChannel(bundleID: Self.bundleID, storagePolicy: .noMessageStored)
            await #expect {
                try await client.createChannel(bundleID: Self.bundleID, storagePolicy: .noMessageStored)
            } throws: { error in
                let rejection = error as? APNSRejection
                return rejection?.status == 400 && rejection?.reason == .cannotCreateChannelConfig
            }
            await pool.shutdown()
        }
    }

    @Test func appsOutsideTheSimulatorOrWithoutTheCapabilityAreRefused() async throws {
        try await withSimulator(
            topics: ["com.example.app", "com.example.plain"],
            configure: { $0.broadcastDisabledTopics = ["com.example.plain"] }
        ) { fixture in
            let (client, pool) = fixture.makeClient()
            await #expect {
                try await client.createChannel(bundleID: "com.example.other", storagePolicy: .noMessageStored)
            } throws: { error in
                (error as? APNSRejection)?.status == 403 && (error as? APNSRejection)?.reason == .topicMismatch
            }
            await #expect {
                try await client.allChannels(bundleID: "com.example.plain")
            } throws: { error in
                (error as? APNSRejection)?.reason == .featureNotEnabled
            }
            await pool.shutdown()
        }
    }

    @Test func broadcastsFollowTheirChannelsRules() async throws {
        try await withSimulator { fixture in
            let (client, pool) = fixture.makeClient()
            let policy0 = try await client.createChannel(bundleID: Self.bundleID, storagePolicy: .noMessageStored)
            let policy1 = try await client.createChannel(
                bundleID: Self.bundleID,
                storagePolicy: .mostRecentMessageStored
            )
            let later = APNSExpiration.at(fixture.clock.now().addingTimeInterval(3600))

            let delivered = try await client.send(try Self.update(policy0, policy: .noMessageStored))
            guard case .delivered(let delivery) = delivered else {
                Issue.record("not delivered: \(delivered)")
                return
            }
            #expect(delivery.requestID != nil)
            #expect(delivery.uniqueID != nil)
            #expect(
                try await client.send(try Self.update(policy1, policy: .mostRecentMessageStored, expiration: later))
                    .isDelivered
            )
            // The client believes the channel stores messages; the simulator knows it does not.
            let wrong = try await client.send(
                try Self.update(policy0, policy: .mostRecentMessageStored, expiration: later)
            )
            #expect(wrong.answer.status == 400)
            #expect(wrong.answer.reason == "BadExpirationDate")
            let unknown = APNSChannelID(rawValue: "bm90LWEtY2hhbm5lbA==")
            let missing = try await client.send(try Self.update(unknown, policy: .noMessageStored))
            #expect(missing.answer.reason == "ChannelNotRegistered")

            let recorded = fixture.simulator.deliveries(.init(kind: .broadcast))
            #expect(recorded.count == 4)
            let first = try #require(recorded.last)
            #expect(first.channelID == policy0.rawValue)
            #expect(first.topic == Self.bundleID)
            #expect(first.pushType == "liveactivity")
            #expect(first.priority == 5)
            #expect(first.expiration == 0)
            #expect(first.status == 200)
            #expect(first.requestID == delivery.requestID?.uuidString.lowercased())
            #expect(first.payloadJSON?["aps"]?["event"] == "update")
            await pool.shutdown()
        }
    }

    @Test func rawBroadcastAndManagementRules() async throws {
        try await withSimulator { fixture in
            let (client, pool) = fixture.makeClient()
            let channel = try await client.createChannel(bundleID: Self.bundleID, storagePolicy: .noMessageStored)
            await pool.shutdown()
            let connection = try await fixture.connect()
            let jwt = try fixture.jwt()
            func request(
                method: String = "POST",
                path: String = "/4/broadcasts/apps/\(Self.bundleID)",
                _ fields: [(String, String)],
                body: String = #"{"aps":{"event":"update","timestamp":1,"content-state":{}}}"#
            ) -> HTTP2Request {
                var headers = HTTP2Headers()
                headers.add(name: "authorization", value: "bearer \(jwt)")
                for (name, value) in fields { headers.add(name: name, value: value) }
                return HTTP2Request(method: method, path: path, headers: headers, body: Array(body.utf8))
            }
            let valid: [(String, String)] = [
                ("apns-channel-id", channel.rawValue), ("apns-push-type", "liveactivity"), ("apns-priority", "10"),
                ("apns-expiration", "0"),
            ]
            func without(_ name: String) -> [(String, String)] { valid.filter { $0.0 != name } }
            let big = #"{"aps":{"event":"update"},"x":""# + String(repeating: "x", count: 5200) + #""}"#
            let channels = "/1/apps/\(Self.bundleID)/channels"
            let cases: [(String, HTTP2Request, Int, String?)] = [
                ("valid", request(valid), 200, nil),
                ("GET", request(method: "GET", valid), 405, "MethodNotAllowed"),
                (
                    "suffix", request(path: "/4/broadcasts/apps/\(Self.bundleID).push-type.liveactivity", valid), 400,
                    "TopicDisallowed"
                ),
                ("no channel", request(without("apns-channel-id")), 400, "MissingChannelId"),
                ("bad channel", request(without("apns-channel-id") + [("apns-channel-id", "*")]), 400, "BadChannelId"),
                ("no push type", request(without("apns-push-type")), 400, "MissingPushType"),
                ("alert", request(without("apns-push-type") + [("apns-push-type", "alert")]), 400, "InvalidPushType"),
                ("no priority", request(without("apns-priority")), 400, "BadPriority"),
                ("no expiration", request(without("apns-expiration")), 400, "BadExpirationDate"),
                (
                    "policy 0, expiration set",
                    request(without("apns-expiration") + [("apns-expiration", "1900000000")]), 400, "BadExpirationDate"
                ),
                ("5121+ bytes", request(valid, body: big), 413, "PayloadTooLarge"),
                ("no body", request(valid, body: ""), 400, "PayloadEmpty"),
                ("request id not a UUID", request(valid + [("apns-request-id", "x")]), 400, "BadMessageId"),
                (
                    "create without push type", request(path: channels, [], body: #"{"message-storage-policy":0}"#),
                    400, "MissingPushType"
                ),
                (
                    "create with extra",
                    request(
                        path: channels,
                        [],
                        body: #"{"message-storage-policy":0,"push-type":"LiveActivity","a":1}"#
                    ), 400, "BadRequestParams"
                ),
                ("read without channel", request(method: "GET", path: channels, []), 400, "MissingChannelId"),
                (
                    "delete bad channel", request(method: "DELETE", path: channels, [("apns-channel-id", "!")]), 400,
                    "BadChannelId"
                ),
                ("PUT", request(method: "PUT", path: channels, []), 405, "MethodNotAllowed"),
                (
                    "unknown management path", request(method: "GET", path: "/1/apps/\(Self.bundleID)/chanels", []),
                    404, "BadPath"
                ),
            ]
            for (name, request, status, reason) in cases {
                let response = try await connection.send(request)
                #expect(response.status == status, "\(name)")
                #expect(response.reason == reason, "\(name)")
                #expect(response.headers["apns-request-id"] != nil || status == 404, "\(name): apns-request-id")
            }
            let requestID = "1b4e28ba-2fa1-11d2-883f-0016d3cca427"
            let echoed = try await connection.send(request(valid + [("apns-request-id", requestID)]))
            #expect(echoed.headers["apns-request-id"] == requestID)
            let created = try await connection.send(
                request(path: channels, [], body: #"{"message-storage-policy":1,"push-type":"LiveActivity"}"#)
            )
            #expect(created.status == 201)
            #expect(created.body.isEmpty)
            let id = try #require(created.headers["apns-channel-id"])
            let deleted = try await connection.send(
                request(method: "DELETE", path: channels, [("apns-channel-id", id)])
            )
            #expect(deleted.status == 204)
            await connection.close()
        }
    }
}
