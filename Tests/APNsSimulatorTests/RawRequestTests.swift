import APNs
import APNsSimulator
import Foundation
import HTTP2
import HeraldCrypto
import Testing

/// Requests the project's client refuses to send (bad method, path, token, duplicate or malformed
/// headers, bad bodies, bad provider tokens), sent raw over HTTP/2 and TLS.
@Suite struct RawRequestTests {
    @Test func deviceRulesAnswerApplesStatusesAndReasons() async throws {
        try await withSimulator { fixture in
            let connection = try await fixture.connect()
            let jwt = try fixture.jwt()
            let token = SimulatorFixture.token
            func push(
                token: String = token,
                _ headers: [(String, String)] = [],
                omitting: Set<String> = [],
                payload: String = #"{"aps":{"alert":"Hello"}}"#
            ) -> HTTP2Request {
                fixture.devicePush(token: token, jwt: jwt, headers: headers, omitting: omitting, payload: payload)
            }
            var get = push()
            get.method = "GET"
            var badPath = push()
            badPath.path = "/3/devices/\(token)"
            var duplicate = push()
            duplicate.headers.add(name: "apns-topic", value: SimulatorFixture.bundleID)
            let large = #"{"aps":{},"x":""# + String(repeating: "x", count: 4100) + #""}"#
            let voipLimit = #"{"aps":{},"x":""# + String(repeating: "x", count: 5120 - 17) + #""}"#
            let voip: [(String, String)] = [("apns-push-type", "voip"), ("apns-topic", "com.example.app.voip")]
            let background: [(String, String)] = [("apns-push-type", "background"), ("apns-priority", "10")]
            let cases: [(String, HTTP2Request, Int, String?)] = [
                ("valid", push(), 200, nil),
                ("GET", get, 405, "MethodNotAllowed"),
                ("unknown path", badPath, 404, "BadPath"),
                ("no token", push(token: ""), 400, "MissingDeviceToken"),
                ("short token", push(token: "abcdef"), 400, "BadDeviceToken"),
                ("non-hex token", push(token: String(repeating: "g", count: 64)), 400, "BadDeviceToken"),
                ("duplicate header", duplicate, 400, "DuplicateHeaders"),
                ("no authorization", push(omitting: ["authorization"]), 403, "MissingProviderToken"),
                ("garbage token", push([("authorization", "bearer abc.def.ghi")]), 403, "InvalidProviderToken"),
                ("no topic", push(omitting: ["apns-topic"]), 400, "MissingTopic"),
                ("malformed topic", push([("apns-topic", "com/example")]), 400, "BadTopic"),
                ("unknown push type", push([("apns-push-type", "banana")]), 400, "InvalidPushType"),
                ("voip without its suffix", push([("apns-push-type", "voip")]), 400, "TopicDisallowed"),
                ("priority 7", push([("apns-priority", "7")]), 400, "BadPriority"),
                (
                    "background at priority 10", push(background, payload: #"{"aps":{"content-available":1}}"#), 400,
                    "BadPriority"
                ),
                ("apns-id not a UUID", push([("apns-id", "42")]), 400, "BadMessageId"),
                (
                    "collapse id of 65 bytes", push([("apns-collapse-id", String(repeating: "c", count: 65))]), 400,
                    "BadCollapseId"
                ),
                ("expiration not a number", push([("apns-expiration", "tomorrow")]), 400, "BadExpirationDate"),
                ("empty payload", push(payload: ""), 400, "PayloadEmpty"),
                ("payload not JSON", push(payload: "{\"aps\":"), 400, "BadRequestPayload"),
                ("payload over 4096 bytes", push(payload: large), 413, "PayloadTooLarge"),
                ("voip payload of 5120 bytes", push(voip, payload: voipLimit), 200, nil),
                (
                    "voip payload over 5120 bytes", push(voip, payload: large + String(repeating: " ", count: 1100)),
                    413, "PayloadTooLarge"
                ),
            ]
            for (name, request, status, reason) in cases {
                let response = try await connection.send(request)
                #expect(response.status == status, "\(name)")
                #expect(response.reason == reason, "\(name)")
                if request.path.hasPrefix("/3/device/") {
                    #expect(response.headers["apns-id"].flatMap(UUID.init(uuidString:)) != nil, "\(name): apns-id")
                }
            }
            // Every device-route request was recorded with its answer.
            let recorded = fixture.simulator.deliveries(.init(limit: 100))
            #expect(recorded.count == cases.count - 1)
            #expect(recorded.first(where: { $0.reason == .badCollapseId })?.collapseID?.utf8.count == 65)
            await connection.close()
        }
    }

    @Test func theAPNsIDIsEchoedOrGenerated() async throws {
        try await withSimulator { fixture in
            let connection = try await fixture.connect()
            let jwt = try fixture.jwt()
            let id = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
            let echoed = try await connection.send(fixture.devicePush(jwt: jwt, headers: [("apns-id", id)]))
            #expect(echoed.status == 200)
            #expect(echoed.headers["apns-id"] == id)
            #expect(echoed.headers["apns-unique-id"] != nil)
            let generated = try await connection.send(fixture.devicePush(jwt: jwt))
            let value = try #require(generated.headers["apns-id"])
            #expect(value == value.lowercased())
            #expect(UUID(uuidString: value) != nil)
            let refused = try await connection.send(
                fixture.devicePush(jwt: jwt, headers: [("apns-id", id)], payload: "")
            )
            #expect(refused.headers["apns-id"] == id)
            #expect(refused.headers["content-type"] == "application/json")
            await connection.close()
        }
    }

    @Test func oneTeamAndOneKeyPerConnection() async throws {
        let sameTeam = try makeSigningKey(keyID: "SECONDKEY1", teamID: "TEAMSHARED")
        let otherTeam = try makeSigningKey(keyID: "THIRDKEY01", teamID: "TEAMOTHER1")
        let first = try makeSigningKey(keyID: "FIRSTKEY01", teamID: "TEAMSHARED")
        try await withSimulator(configure: { configuration in
            configuration.teamID = nil
            configuration.keys = [first, sameTeam, otherTeam].map {
                APNSSimulatorKey(keyID: $0.keyID, teamID: $0.teamID, publicKey: $0.privateKey.publicKey)
            }
        }) { fixture in
            let connection = try await fixture.connect()
            let accepted = try await connection.send(fixture.devicePush(jwt: try fixture.jwt(key: first)))
            #expect(accepted.status == 200)
            let unrelated = try await connection.send(fixture.devicePush(jwt: try fixture.jwt(key: sameTeam)))
            #expect(unrelated.status == 403)
            #expect(unrelated.reason == "UnrelatedKeyIdInToken")
            let foreign = try await connection.send(fixture.devicePush(jwt: try fixture.jwt(key: otherTeam)))
            #expect(foreign.status == 403)
            #expect(foreign.reason == "InvalidProviderToken")
            // A new connection may use the other team.
            let fresh = try await fixture.connect()
            #expect(try await fresh.send(fixture.devicePush(jwt: try fixture.jwt(key: otherTeam))).status == 200)
            await connection.close()
            await fresh.close()
        }
    }

    @Test func providerTokensExpireOnTheSimulatorsClock() async throws {
        try await withSimulator { fixture in
            let connection = try await fixture.connect()
            let jwt = try fixture.jwt()
            #expect(try await connection.send(fixture.devicePush(jwt: jwt)).status == 200)
            fixture.clock.advance(by: 3601)
            let expired = try await connection.send(fixture.devicePush(jwt: jwt))
            #expect(expired.status == 403)
            #expect(expired.reason == "ExpiredProviderToken")
            #expect(try await connection.send(fixture.devicePush(jwt: try fixture.jwt())).status == 200)
            await connection.close()
        }
    }

    @Test func theCleartextListenerAnswersTheSame() async throws {
        try await withSimulator { fixture in
            let connection = try await fixture.connect(cleartext: true)
            let jwt = try fixture.jwt()
            #expect(try await connection.send(fixture.devicePush(jwt: jwt)).status == 200)
            let refused = try await connection.send(fixture.devicePush(token: "12", jwt: jwt))
            #expect(refused.status == 400)
            #expect(refused.reason == "BadDeviceToken")
            await connection.close()
        }
    }
}
