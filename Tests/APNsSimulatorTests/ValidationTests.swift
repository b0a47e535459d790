import APNs
import Foundation
import HTTP2
import Testing

@testable import APNsSimulator

/// The pure checks, request by request, in the order APNs applies them (docs/SIMULATOR.md).
@Suite struct ValidationTests {
    static let token = String(repeating: "0f", count: 32)
    static let apps = SimulatorApps(
        bundleIDs: ["com.example.app", "com.example.nobroadcast"],
        broadcastDisabled: ["com.example.nobroadcast"]
    )

    /// A valid alert push with `changes` applied (a nil value removes the field).
    static func push(
        method: String = "POST",
        path: String = "/3/device/\(token)",
        _ changes: [(String, String?)] = [],
        body: String = #"{"aps":{"alert":"Hi"}}"#
    ) -> SimulatorRequest {
        var fields: [(String, String)] = [
            ("apns-topic", "com.example.app"), ("apns-push-type", "alert"), ("apns-priority", "10"),
        ]
        for (name, value) in changes {
            if let index = fields.firstIndex(where: { $0.0 == name }) {
                if let value { fields[index].1 = value } else { fields.remove(at: index) }
            } else if let value {
                fields.append((name, value))
            }
        }
        return SimulatorRequest(
            method: method,
            path: path,
            headers: HTTP2Headers(fields.map { HTTP2Header(name: $0.0, value: $0.1) }),
            body: Array(body.utf8)
        )
    }

    static let deviceCases: [(String, SimulatorRequest, Int, String?)] = [
        ("valid alert", push(), 200, nil),
        ("GET", push(method: "GET"), 405, "MethodNotAllowed"),
        ("no token", push(path: "/3/device/"), 400, "MissingDeviceToken"),
        ("no token, no slash", push(path: "/3/device"), 400, "MissingDeviceToken"),
        ("short token", push(path: "/3/device/abcd"), 400, "BadDeviceToken"),
        ("odd token", push(path: "/3/device/\(token)a"), 400, "BadDeviceToken"),
        ("non-hex token", push(path: "/3/device/" + String(repeating: "zz", count: 32)), 400, "BadDeviceToken"),
        ("uppercase token", push(path: "/3/device/" + token.uppercased()), 200, nil),
        (
            "duplicate apns-topic", push([("apns-topic", "com.example.app")]).adding("apns-topic", "com.example.app"),
            400, "DuplicateHeaders"
        ),
        ("no topic", push([("apns-topic", nil)]), 400, "MissingTopic"),
        ("topic with a space", push([("apns-topic", "com example")]), 400, "BadTopic"),
        ("unknown push type", push([("apns-push-type", "banana")]), 400, "InvalidPushType"),
        ("push type in capitals", push([("apns-push-type", "Alert")]), 400, "InvalidPushType"),
        ("no push type: alert", push([("apns-push-type", nil)]), 200, nil),
        ("other app", push([("apns-topic", "com.example.other")]), 400, "TopicDisallowed"),
        ("voip without suffix", push([("apns-push-type", "voip")]), 400, "TopicDisallowed"),
        ("alert to the voip topic", push([("apns-topic", "com.example.app.voip")]), 400, "TopicDisallowed"),
        ("voip", push([("apns-push-type", "voip"), ("apns-topic", "com.example.app.voip")]), 200, nil),
        (
            "live activity",
            push([("apns-push-type", "liveactivity"), ("apns-topic", "com.example.app.push-type.liveactivity")]),
            200, nil
        ),
        ("priority 7", push([("apns-priority", "7")]), 400, "BadPriority"),
        ("priority word", push([("apns-priority", "high")]), 400, "BadPriority"),
        (
            "background at 10",
            push(
                [("apns-push-type", "background"), ("apns-priority", "10")],
                body: #"{"aps":{"content-available":1}}"#
            ),
            400, "BadPriority"
        ),
        (
            "background at 5",
            push(
                [("apns-push-type", "background"), ("apns-priority", "5")],
                body: #"{"aps":{"content-available":1}}"#
            ),
            200, nil
        ),
        (
            "background without priority",
            push(
                [("apns-push-type", "background"), ("apns-priority", nil)],
                body: #"{"aps":{"content-available":1}}"#
            ),
            200, nil
        ),
        (
            "live activity at 1",
            push([
                ("apns-push-type", "liveactivity"), ("apns-topic", "com.example.app.push-type.liveactivity"),
                ("apns-priority", "1"),
            ]),
            400, "BadPriority"
        ),
        ("alert at 1", push([("apns-priority", "1")]), 200, nil),
        ("apns-id not a UUID", push([("apns-id", "12345")]), 400, "BadMessageId"),
        ("apns-id without dashes", push([("apns-id", String(repeating: "a", count: 36))]), 400, "BadMessageId"),
        ("apns-id lowercase", push([("apns-id", "123e4567-e89b-12d3-a456-426614174000")]), 200, nil),
        ("apns-id uppercase", push([("apns-id", "123E4567-E89B-12D3-A456-426614174000")]), 200, nil),
        ("collapse id 64 bytes", push([("apns-collapse-id", String(repeating: "c", count: 64))]), 200, nil),
        ("collapse id 65 bytes", push([("apns-collapse-id", String(repeating: "c", count: 65))]), 400, "BadCollapseId"),
        (
            "collapse id 22 characters, 66 bytes", push([("apns-collapse-id", String(repeating: "€", count: 22))]), 400,
            "BadCollapseId"
        ),
        ("expiration 0", push([("apns-expiration", "0")]), 200, nil),
        ("expiration seconds", push([("apns-expiration", "1900000000")]), 200, nil),
        ("expiration date", push([("apns-expiration", "2030-01-01")]), 400, "BadExpirationDate"),
        ("expiration negative", push([("apns-expiration", "-5")]), 400, "BadExpirationDate"),
        ("empty payload", push(body: ""), 400, "PayloadEmpty"),
        ("payload not JSON", push(body: "hello"), 400, "BadRequestPayload"),
        ("payload with a trailing comma", push(body: #"{"aps":{},}"#), 400, "BadRequestPayload"),
        ("payload an array", push(body: "[1,2]"), 400, "BadRequestPayload"),
        ("payload 4096 bytes", push(body: payload(size: 4096)), 200, nil),
        ("payload 4097 bytes", push(body: payload(size: 4097)), 413, "PayloadTooLarge"),
        (
            "voip payload 5120 bytes",
            push([("apns-push-type", "voip"), ("apns-topic", "com.example.app.voip")], body: payload(size: 5120)),
            200, nil
        ),
        (
            "voip payload 5121 bytes",
            push([("apns-push-type", "voip"), ("apns-topic", "com.example.app.voip")], body: payload(size: 5121)),
            413, "PayloadTooLarge"
        ),
        // Order: the earlier check wins.
        ("GET without token", push(method: "GET", path: "/3/device/"), 405, "MethodNotAllowed"),
        ("bad token and no topic", push(path: "/3/device/xyz", [("apns-topic", nil)]), 400, "BadDeviceToken"),
        ("no topic and bad priority", push([("apns-topic", nil), ("apns-priority", "7")]), 400, "MissingTopic"),
        ("bad priority and empty payload", push([("apns-priority", "7")], body: ""), 400, "BadPriority"),
    ]

    /// A JSON object of exactly `size` bytes.
    static func payload(size: Int) -> String {
        let frame = #"{"aps":{},"pad":""}"#
        return #"{"aps":{},"pad":""# + String(repeating: "x", count: size - frame.utf8.count) + #""}"#
    }

    @Test func devicePushChecks() {
        let validator = DevicePushValidator(apps: Self.apps, malformedPayloadReason: .badRequestPayload)
        for (name, request, status, reason) in Self.deviceCases {
            switch validator.validate(request) {
            case .success:
                #expect(status == 200, "\(name): accepted, expected \(status) \(reason ?? "")")
            case .failure(let rejection):
                #expect(rejection.status == status, "\(name)")
                #expect(rejection.reason.rawValue == reason, "\(name)")
            }
        }
    }

    @Test func authenticationComesAfterTheRequestChecksAndBeforeTheNotificationChecks() {
        let validator = DevicePushValidator(apps: Self.apps, malformedPayloadReason: .badRequestPayload)
        let refuse: (SimulatorRequest) -> SimulatorRejection? = { _ in .forbidden(.missingProviderToken) }
        let badToken = validator.validate(Self.push(path: "/3/device/xyz"), authenticate: refuse)
        #expect((try? badToken.get()) == nil)
        if case .failure(let rejection) = badToken { #expect(rejection.reason == .badDeviceToken) }
        let noTopic = validator.validate(Self.push([("apns-topic", nil)]), authenticate: refuse)
        if case .failure(let rejection) = noTopic { #expect(rejection.reason == .missingProviderToken) }
        let duplicated = validator.validate(Self.push().adding("apns-id", "x"), authenticate: refuse)
        if case .failure(let rejection) = duplicated { #expect(rejection.reason == .missingProviderToken) }
        let twice = validator.validate(Self.push().adding("apns-topic", "com.example.app"), authenticate: refuse)
        if case .failure(let rejection) = twice { #expect(rejection.reason == .duplicateHeaders) }
    }

    @Test func everyPushTypeIsAcceptedOnItsTopic() throws {
        let validator = DevicePushValidator(apps: Self.apps, malformedPayloadReason: .badRequestPayload)
        for type in APNSPushType.allCases where type != .mdm {
            let priority = type.allowedPriorities.first!
            let request = Self.push([
                ("apns-push-type", type.headerValue), ("apns-topic", type.topic(forBundleID: "com.example.app")),
                ("apns-priority", priority.headerValue),
            ])
            let push = try validator.validate(request).get()
            #expect(push.pushType == type)
            #expect(push.bundleID == "com.example.app")
        }
    }

    @Test func withoutConfiguredAppsAnyBundleIsServedButSuffixesMustMatch() {
        let validator = DevicePushValidator(
            apps: SimulatorApps(bundleIDs: []),
            malformedPayloadReason: .badRequestPayload
        )
        #expect((try? validator.validate(Self.push([("apns-topic", "org.any.thing")])).get()) != nil)
        let mismatched = validator.validate(Self.push([("apns-topic", "org.any.thing.push-type.liveactivity")]))
        if case .failure(let rejection) = mismatched {
            #expect(rejection.reason == .topicDisallowed)
        } else {
            Issue.record("a Live Activity topic with an alert push type was accepted")
        }
    }

    @Test func malformedPayloadReasonIsConfigurable() {
        let validator = DevicePushValidator(apps: Self.apps, malformedPayloadReason: .payloadEmpty)
        if case .failure(let rejection) = validator.validate(Self.push(body: "{")) {
            #expect(rejection.reason == .payloadEmpty)
        } else {
            Issue.record("a malformed payload was accepted")
        }
    }

    // MARK: Broadcasts

    static let channel = "dGVzdC1jaGFubmVsLTE="

    static func broadcast(
        method: String = "POST",
        bundleID: String = "com.example.app",
        _ changes: [(String, String?)] = [],
        body: String = #"{"aps":{"event":"update","timestamp":1,"content-state":{}}}"#
    ) -> SimulatorRequest {
        var request = push(method: method, path: "/4/broadcasts/apps/\(bundleID)", body: body)
        var fields: [(String, String)] = [
            ("apns-channel-id", channel), ("apns-push-type", "liveactivity"), ("apns-priority", "10"),
            ("apns-expiration", "0"),
        ]
        for (name, value) in changes {
            if let index = fields.firstIndex(where: { $0.0 == name }) {
                if let value { fields[index].1 = value } else { fields.remove(at: index) }
            } else if let value {
                fields.append((name, value))
            }
        }
        request.headers = HTTP2Headers(fields.map { HTTP2Header(name: $0.0, value: $0.1) })
        return request
    }

    static let broadcastCases: [(String, SimulatorRequest, Int, String?)] = [
        ("valid", broadcast(), 200, nil),
        ("GET", broadcast(method: "GET"), 405, "MethodNotAllowed"),
        ("duplicate header", broadcast().adding("apns-priority", "10"), 400, "DuplicateHeaders"),
        ("suffix in path", broadcast(bundleID: "com.example.app.push-type.liveactivity"), 400, "TopicDisallowed"),
        ("other app", broadcast(bundleID: "com.example.other"), 403, "TopicMismatch"),
        ("no capability", broadcast(bundleID: "com.example.nobroadcast"), 400, "FeatureNotEnabled"),
        ("bad request id", broadcast([("apns-request-id", "nope")]), 400, "BadMessageId"),
        ("no channel", broadcast([("apns-channel-id", nil)]), 400, "MissingChannelId"),
        ("channel not base64", broadcast([("apns-channel-id", "not base64!")]), 400, "BadChannelId"),
        ("no push type", broadcast([("apns-push-type", nil)]), 400, "MissingPushType"),
        ("alert push type", broadcast([("apns-push-type", "alert")]), 400, "InvalidPushType"),
        ("LiveActivity spelling", broadcast([("apns-push-type", "LiveActivity")]), 200, nil),
        ("no priority", broadcast([("apns-priority", nil)]), 400, "BadPriority"),
        ("priority 7", broadcast([("apns-priority", "7")]), 400, "BadPriority"),
        ("priority 1", broadcast([("apns-priority", "1")]), 200, nil),
        ("no expiration", broadcast([("apns-expiration", nil)]), 400, "BadExpirationDate"),
        ("expiration word", broadcast([("apns-expiration", "soon")]), 400, "BadExpirationDate"),
        ("empty payload", broadcast(body: ""), 400, "PayloadEmpty"),
        ("payload not JSON", broadcast(body: "{"), 400, "BadRequestPayload"),
        ("payload 5120 bytes", broadcast(body: payload(size: 5120)), 200, nil),
        ("payload 5121 bytes", broadcast(body: payload(size: 5121)), 413, "PayloadTooLarge"),
    ]

    @Test func broadcastChecks() {
        let validator = BroadcastValidator(apps: Self.apps)
        for (name, request, status, reason) in Self.broadcastCases {
            switch validator.validate(request) {
            case .success:
                #expect(status == 200, "\(name): accepted, expected \(status) \(reason ?? "")")
            case .failure(let rejection):
                #expect(rejection.status == status, "\(name)")
                #expect(rejection.reason.rawValue == reason, "\(name)")
            }
        }
    }

    // MARK: Channel management

    static func management(
        method: String,
        path: String = "/1/apps/com.example.app/channels",
        channel: String? = ValidationTests.channel,
        body: String = ""
    ) -> SimulatorRequest {
        var headers = HTTP2Headers()
        if let channel { headers.add(name: "apns-channel-id", value: channel) }
        return SimulatorRequest(method: method, path: path, headers: headers, body: Array(body.utf8))
    }

    static let create = #"{"message-storage-policy":1,"push-type":"LiveActivity"}"#

    static let channelCases: [(String, SimulatorRequest, ChannelOperation?, Int, String?)] = [
        ("create", management(method: "POST", channel: nil, body: create), .create(.mostRecentMessageStored), 0, nil),
        (
            "create policy 0",
            management(method: "POST", channel: nil, body: #"{"push-type":"LiveActivity","message-storage-policy":0}"#),
            .create(.noMessageStored), 0, nil
        ),
        ("read", management(method: "GET"), .read(channelID: channel), 0, nil),
        ("delete", management(method: "DELETE"), .delete(channelID: channel), 0, nil),
        (
            "list", management(method: "GET", path: "/1/apps/com.example.app/all-channels", channel: nil), .listAll, 0,
            nil
        ),
        ("PUT", management(method: "PUT"), nil, 405, "MethodNotAllowed"),
        (
            "POST to all-channels", management(method: "POST", path: "/1/apps/com.example.app/all-channels"), nil, 405,
            "MethodNotAllowed"
        ),
        ("create without body", management(method: "POST", channel: nil), nil, 400, "PayloadEmpty"),
        ("create with broken JSON", management(method: "POST", channel: nil, body: "{"), nil, 400, "BadRequestPayload"),
        (
            "create with an unknown attribute",
            management(
                method: "POST",
                channel: nil,
                body: #"{"message-storage-policy":1,"push-type":"LiveActivity","x":1}"#
            ),
            nil, 400, "BadRequestParams"
        ),
        (
            "create without push type",
            management(method: "POST", channel: nil, body: #"{"message-storage-policy":1}"#), nil, 400,
            "MissingPushType"
        ),
        (
            "create with another push type",
            management(method: "POST", channel: nil, body: #"{"message-storage-policy":1,"push-type":"alert"}"#),
            nil, 400, "InvalidPushType"
        ),
        (
            "create with policy 2",
            management(method: "POST", channel: nil, body: #"{"message-storage-policy":2,"push-type":"LiveActivity"}"#),
            nil, 400, "BadRequestParams"
        ),
        (
            "create without policy", management(method: "POST", channel: nil, body: #"{"push-type":"LiveActivity"}"#),
            nil, 400, "BadRequestParams"
        ),
        ("read without channel", management(method: "GET", channel: nil), nil, 400, "MissingChannelId"),
        ("delete with a bad channel", management(method: "DELETE", channel: "%%%"), nil, 400, "BadChannelId"),
        (
            "suffix in path", management(method: "GET", path: "/1/apps/com.example.app.voip/channels"), nil, 400,
            "TopicDisallowed"
        ),
        ("other app", management(method: "GET", path: "/1/apps/com.example.other/channels"), nil, 403, "TopicMismatch"),
        (
            "no capability", management(method: "GET", path: "/1/apps/com.example.nobroadcast/channels"), nil, 400,
            "FeatureNotEnabled"
        ),
        ("unknown path", management(method: "GET", path: "/1/apps/com.example.app/channel"), nil, 404, "BadPath"),
    ]

    @Test func channelManagementChecks() {
        let validator = ChannelRequestValidator(apps: Self.apps)
        for (name, request, operation, status, reason) in Self.channelCases {
            switch validator.validate(request) {
            case .success(let checked):
                #expect(checked.operation == operation, "\(name)")
                #expect(status == 0, "\(name): accepted, expected \(status) \(reason ?? "")")
            case .failure(let rejection):
                #expect(rejection.status == status, "\(name)")
                #expect(rejection.reason.rawValue == reason, "\(name)")
            }
        }
    }

    // MARK: Routes and bodies

    @Test func routes() {
        #expect(SimulatorRoute(path: "/3/device/abc") == .device(token: "abc"))
        #expect(SimulatorRoute(path: "/3/device") == .device(token: ""))
        #expect(SimulatorRoute(path: "/4/broadcasts/apps/com.a") == .broadcast(bundleID: "com.a"))
        #expect(SimulatorRoute(path: "/4/broadcasts/apps/com.a/x") == .unknown)
        #expect(SimulatorRoute(path: "/4/broadcasts/apps/") == .unknown)
        #expect(SimulatorRoute(path: "/1/apps/com.a/channels") == .channels(bundleID: "com.a"))
        #expect(SimulatorRoute(path: "/1/apps/com.a/all-channels") == .allChannels(bundleID: "com.a"))
        #expect(SimulatorRoute(path: "/1/apps/com.a/channels/x") == .unknown)
        #expect(SimulatorRoute(path: "/2/device/abc") == .unknown)
        #expect(SimulatorRoute(path: "/") == .unknown)
    }

    @Test func rejectionBodies() {
        #expect(
            String(decoding: SimulatorRejection.badRequest(.badTopic).body, as: UTF8.self) == #"{"reason":"BadTopic"}"#
        )
        let gone = SimulatorRejection(
            status: 410,
            reason: .unregistered,
            timestamp: Date(timeIntervalSince1970: 1_700_000_000.123)
        )
        #expect(String(decoding: gone.body, as: UTF8.self) == #"{"reason":"Unregistered","timestamp":1700000000123}"#)
    }
}

extension SimulatorRequest {
    /// The request with one more header field (duplicates allowed).
    func adding(_ name: String, _ value: String) -> SimulatorRequest {
        var copy = self
        copy.headers.add(name: name, value: value)
        return copy
    }
}
