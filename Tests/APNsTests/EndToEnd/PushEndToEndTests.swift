import APNs
import APNsTransport
import Foundation
import HTTP2
import HeraldCore
import HeraldCrypto
import Testing

/// Every push type, 410 handling and input validation, through the real ``APNSClient`` and
/// ``APNSConnectionPool`` over HTTP/2 and TLS to an in-process server that applies APNs' rules.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct PushEndToEndTests {
    struct Case: Sendable, CustomStringConvertible {
        var type: APNSPushType
        var topic: APNSTopic
        var payload: String
        var priority: APNSPriority?
        var expiration: APNSExpiration
        var collapseID: String?
        var expectedTopic: String
        var expectedPriority: String

        var description: String { type.headerValue }
    }

    static let expiry = Date(timeIntervalSince1970: 1_900_000_000)

    static let cases: [Case] = [
        Case(
            type: .alert,
            topic: .bundleID(Fixtures.bundleID),
            payload: #"{"aps":{"alert":{"title":"Hello","body":"Wörld ✓"},"sound":"default","badge":3},"k":1}"#,
            priority: .immediately,
            expiration: .at(expiry),
            collapseID: "score-update",
            expectedTopic: "com.example.app",
            expectedPriority: "10"
        ),
        Case(
            type: .background,
            topic: .bundleID(Fixtures.bundleID),
            payload: #"{"aps":{"content-available":1},"sync":"inbox"}"#,
            priority: nil,
            expiration: .omitted,
            collapseID: nil,
            expectedTopic: "com.example.app",
            expectedPriority: "5"
        ),
        Case(
            type: .location,
            topic: .bundleID(Fixtures.bundleID),
            payload: #"{"aps":{}}"#,
            priority: .immediately,
            expiration: .immediately,
            collapseID: nil,
            expectedTopic: "com.example.app.location-query",
            expectedPriority: "10"
        ),
        Case(
            type: .voip,
            topic: .bundleID(Fixtures.bundleID),
            // Above the 4096 bytes of other types, within VoIP's 5120.
            payload: #"{"caller":""# + String(repeating: "v", count: 5000) + #""}"#,
            priority: .immediately,
            expiration: .immediately,
            collapseID: nil,
            expectedTopic: "com.example.app.voip",
            expectedPriority: "10"
        ),
        Case(
            type: .complication,
            topic: .bundleID(Fixtures.bundleID),
            payload: #"{"aps":{},"temperature":21}"#,
            priority: .consideringDevicePower,
            expiration: .at(expiry),
            collapseID: nil,
            expectedTopic: "com.example.app.complication",
            expectedPriority: "5"
        ),
        Case(
            type: .fileProvider,
            topic: .bundleID(Fixtures.bundleID),
            payload: #"{"container-identifier":"NSFileProviderRootContainerItemIdentifier"}"#,
            priority: .prioritizingPower,
            expiration: .omitted,
            collapseID: nil,
            expectedTopic: "com.example.app.pushkit.fileprovider",
            expectedPriority: "1"
        ),
        Case(
            type: .mdm,
            topic: .explicit(Fixtures.bundleID),
            payload: #"{"mdm":"7d1d7b2a-push-magic"}"#,
            priority: nil,
            expiration: .omitted,
            collapseID: nil,
            expectedTopic: "com.example.app",
            expectedPriority: "10"
        ),
        Case(
            type: .liveActivity,
            topic: .bundleID(Fixtures.bundleID),
            payload: #"{"aps":{"timestamp":1700000000,"event":"update","content-state":{"score":"2-1"}}}"#,
            priority: .consideringDevicePower,
            expiration: .at(expiry),
            collapseID: "match-42",
            expectedTopic: "com.example.app.push-type.liveactivity",
            expectedPriority: "5"
        ),
        Case(
            type: .pushToTalk,
            topic: .bundleID(Fixtures.bundleID),
            payload: #"{"aps":{},"activeSpeaker":"Ana"}"#,
            priority: .immediately,
            expiration: .immediately,
            collapseID: nil,
            expectedTopic: "com.example.app.voip-ptt",
            expectedPriority: "10"
        ),
        Case(
            type: .widgets,
            topic: .bundleID(Fixtures.bundleID),
            payload: #"{"aps":{"content-changed":true}}"#,
            priority: nil,
            expiration: .omitted,
            collapseID: nil,
            expectedTopic: "com.example.app.push-type.widgets",
            expectedPriority: "10"
        ),
        Case(
            type: .controls,
            topic: .bundleID(Fixtures.bundleID),
            payload: #"{"aps":{"content-changed":true}}"#,
            priority: .immediately,
            expiration: .immediately,
            collapseID: nil,
            expectedTopic: "com.example.app.push-type.controls",
            expectedPriority: "10"
        ),
    ]

    @Test("the cases cover every push type")
    func coversEveryPushType() {
        #expect(Set(Self.cases.map(\.type)) == Set(APNSPushType.allCases))
    }

    @Test(
        "every push type arrives with the exact pseudo-headers, header fields, body and a valid JWT",
        arguments: cases
    )
    func pushType(_ testCase: Case) async throws {
        try await withHarness { h in
            let token = String(repeating: "A1b2C3d4", count: 8)
            let id = UUID()
            let request = APNSRequest(
                deviceToken: token,
                pushType: testCase.type,
                topic: testCase.topic,
                payload: Array(testCase.payload.utf8),
                id: id,
                expiration: testCase.expiration,
                priority: testCase.priority,
                collapseID: testCase.collapseID
            )
            let result = try await h.client.send(request)
            guard case .delivered(let delivery) = result else {
                Issue.record("expected delivery, got \(result)")
                return
            }
            #expect(delivery.apnsID == id)
            #expect(delivery.attempts == 1)

            #expect(h.server.requestCount == 1)
            let received = try #require(h.server.received.first)
            #expect(received.method == "POST")
            #expect(received.path == "/3/device/" + token.lowercased())
            #expect(received.scheme == "https")
            #expect(received.authority == "127.0.0.1:\(h.server.port)")
            #expect(received.body == Array(testCase.payload.utf8))

            let jwt = try await h.tokens.token()
            var expected: [(String, String)] = [
                ("authorization", "bearer " + jwt),
                ("apns-id", id.uuidString.lowercased()),
                ("apns-push-type", testCase.type.headerValue),
            ]
            if let expiration = testCase.expiration.headerValue { expected.append(("apns-expiration", expiration)) }
            expected.append(("apns-priority", testCase.expectedPriority))
            expected.append(("apns-topic", testCase.expectedTopic))
            if let collapseID = testCase.collapseID { expected.append(("apns-collapse-id", collapseID)) }
            let fields = received.headers.map { ($0.name, $0.value) }
            #expect(fields.count == expected.count, "fields: \(fields.map(\.0))")
            for (index, (name, value)) in expected.enumerated() where index < fields.count {
                #expect(fields[index].0 == name, "field \(index)")
                #expect(fields[index].1 == value, "field \(name)")
            }
            if case .at = testCase.expiration {
                #expect(received.headers["apns-expiration"] == "1900000000")
            }

            let authorization = try #require(received.authorization)
            let decoded = try #require(APNSDecodedProviderToken(authorization))
            #expect(decoded.algorithm == "ES256")
            #expect(decoded.keyID == Fixtures.keyID)
            #expect(decoded.teamID == Fixtures.teamID)
            #expect(
                decoded.issuedAt == Date(timeIntervalSince1970: h.clock.now().timeIntervalSince1970.rounded(.down))
            )
            #expect(decoded.signature.count == 64)
            #expect(decoded.isSignatureValid(for: try P256PublicKey(pemRepresentation: Fixtures.p8PublicKey)))
            #expect(decoded.header.objectValue?.count == 2)
            #expect(decoded.claims.objectValue?.count == 2)
        }
    }

    @Test("per-request values are never indexed by HPACK: the device-token path, apns-id, expiration")
    func neverIndexed() throws {
        let request = APNSRequest(
            deviceToken: Fixtures.token,
            pushType: .alert,
            topic: .bundleID(Fixtures.bundleID),
            payload: Array(#"{"aps":{}}"#.utf8),
            expiration: .at(Self.expiry),
            collapseID: "c"
        )
        let outgoing = request.httpRequest(authorization: "x.y.z").http2Request
        #expect(outgoing.method == "POST")
        #expect(outgoing.path == "/3/device/" + Fixtures.token)
        #expect(outgoing.pathNeverIndexed)
        #expect(outgoing.authority == nil)
        #expect(outgoing.scheme == nil)
        let flags = Dictionary(uniqueKeysWithValues: outgoing.headers.map { ($0.name, $0.neverIndex) })
        #expect(
            flags == [
                "authorization": false, "apns-id": true, "apns-push-type": false, "apns-expiration": true,
                "apns-priority": false, "apns-topic": false, "apns-collapse-id": false,
            ]
        )
        #expect(outgoing.body == request.payload)
    }

    @Test("410 Unregistered: the timestamp is surfaced as deviceTokenInvalidSince, exactly, and not retried")
    func unregistered() async throws {
        try await withHarness { h in
            let since = Date(timeIntervalSince1970: 1_699_000_000.5)
            h.server.fake.unregister(Fixtures.token, at: since)
            let request = APNSRequest.alert()
            let rejection = try #require(try await h.client.send(request).rejection)
            #expect(rejection.status == 410)
            #expect(rejection.reason == .unregistered)
            #expect(rejection.isDeviceTokenInvalid)
            #expect(rejection.deviceTokenInvalidSince == since)
            #expect(rejection.response.apnsID == request.id)
            #expect(rejection.attempts == 1)
            #expect(h.requests(for: request.id).count == 1)

            // Milliseconds that are not a binary fraction: the Date is the exact millisecond.
            let other = deviceToken(0x410)
            h.server.intercept { received in
                guard received.path.hasSuffix(other) else { return .proceed }
                return .respond(
                    HTTP2ServerResponse(
                        status: 410,
                        headers: ["apns-id": received.apnsID ?? ""],
                        body: Array(#"{"reason":"ExpiredToken","timestamp":1699000000123}"#.utf8)
                    )
                )
            }
            let expired = try #require(try await h.client.send(.alert(token: other)).rejection)
            #expect(expired.reason == .expiredToken)
            #expect(expired.deviceTokenInvalidSince == Date(timeIntervalSince1970: 1_699_000_000.123))
            #expect(h.metric("herald_apns_requests_total", [("status", "410")]) == 2)
        }
    }

    @Test("invalid input is refused with a clear error and nothing reaches the server")
    func invalidInputSendsNothing() async throws {
        try await withHarness { h in
            func refused(
                _ request: APNSRequest,
                _ code: APNSValidationError.Code,
                _ field: String,
                sourceLocation: SourceLocation = #_sourceLocation
            ) async {
                do {
                    let result = try await h.client.send(request)
                    Issue.record("expected a validation error, got \(result)", sourceLocation: sourceLocation)
                } catch let error as APNSValidationError {
                    #expect(error.code == code, sourceLocation: sourceLocation)
                    #expect(error.field == field, sourceLocation: sourceLocation)
                    #expect(!error.message.isEmpty, sourceLocation: sourceLocation)
                } catch {
                    Issue.record("expected a validation error, got \(error)", sourceLocation: sourceLocation)
                }
            }
            var request = APNSRequest.alert(token: "0123-not-hex")
            await refused(request, .badDeviceToken, "device_token")
            request = .alert(token: String(Fixtures.token.dropLast()))
            await refused(request, .badDeviceToken, "device_token")

            request = .alert()
            request.payload = Array((#"{"aps":{"alert":""# + String(repeating: "x", count: 4096) + #""}}"#).utf8)
            await refused(request, .payloadTooLarge, "payload")

            request = APNSRequest(
                deviceToken: Fixtures.token,
                pushType: .background,
                topic: .bundleID(Fixtures.bundleID),
                payload: Array(#"{"aps":{"content-available":1}}"#.utf8),
                priority: .immediately
            )
            await refused(request, .badPriority, "priority")

            request = .alert()
            request.collapseID = String(repeating: "c", count: 65)
            await refused(request, .badCollapseID, "collapse_id")

            do {
                let type = try APNSPushType(validating: "webpush")
                Issue.record("an unknown push type was accepted: \(type)")
            } catch let error as APNSValidationError {
                #expect(error.code == .badPushType)
                #expect(error.field == "push_type")
                #expect(error.message.contains("\"webpush\" is not an APNs push type"))
                #expect(error.message.contains("alert, background, location, voip"))
            }
            #expect(try APNSPushType(validating: "liveactivity") == .liveActivity)

            #expect(h.server.requestCount == 0)
            #expect(h.pool.status.openConnections == 0)
            #expect(h.metric("herald_apns_connects_total", [("result", "connected")]) == 0)
            #expect(await h.tokens.tokensGenerated == 0)
        }
    }
}
