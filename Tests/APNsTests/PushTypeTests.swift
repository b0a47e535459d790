import APNs
import Testing

@Suite struct PushTypeTests {
    struct Expected: Sendable, CustomStringConvertible {
        var type: APNSPushType
        var header: String
        var topic: String
        var priorities: [APNSPriority]
        var limit: Int
        var description: String { header }
    }

    static let table: [Expected] = [
        Expected(
            type: .alert,
            header: "alert",
            topic: "com.example.app",
            priorities: [.immediately, .consideringDevicePower, .prioritizingPower],
            limit: 4096
        ),
        Expected(
            type: .background,
            header: "background",
            topic: "com.example.app",
            priorities: [.consideringDevicePower],
            limit: 4096
        ),
        Expected(
            type: .location,
            header: "location",
            topic: "com.example.app.location-query",
            priorities: [.immediately, .consideringDevicePower],
            limit: 4096
        ),
        Expected(
            type: .voip,
            header: "voip",
            topic: "com.example.app.voip",
            priorities: [.immediately, .consideringDevicePower, .prioritizingPower],
            limit: 5120
        ),
        Expected(
            type: .complication,
            header: "complication",
            topic: "com.example.app.complication",
            priorities: [.immediately, .consideringDevicePower, .prioritizingPower],
            limit: 4096
        ),
        Expected(
            type: .fileProvider,
            header: "fileprovider",
            topic: "com.example.app.pushkit.fileprovider",
            priorities: [.immediately, .consideringDevicePower, .prioritizingPower],
            limit: 4096
        ),
        Expected(
            type: .mdm,
            header: "mdm",
            topic: "com.example.app",
            priorities: [.immediately, .consideringDevicePower, .prioritizingPower],
            limit: 4096
        ),
        Expected(
            type: .liveActivity,
            header: "liveactivity",
            topic: "com.example.app.push-type.liveactivity",
            priorities: [.immediately, .consideringDevicePower],
            limit: 4096
        ),
        Expected(
            type: .pushToTalk,
            header: "pushtotalk",
            topic: "com.example.app.voip-ptt",
            priorities: [.immediately, .consideringDevicePower, .prioritizingPower],
            limit: 4096
        ),
        Expected(
            type: .widgets,
            header: "widgets",
            topic: "com.example.app.push-type.widgets",
            priorities: [.immediately, .consideringDevicePower, .prioritizingPower],
            limit: 4096
        ),
        Expected(
            type: .controls,
            header: "controls",
            topic: "com.example.app.push-type.controls",
            priorities: [.immediately, .consideringDevicePower, .prioritizingPower],
            limit: 4096
        ),
    ]

    @Test(arguments: table) func properties(expected: Expected) {
        #expect(expected.type.headerValue == expected.header)
        #expect(expected.type.topic(forBundleID: "com.example.app") == expected.topic)
        #expect(expected.type.allowedPriorities == expected.priorities)
        for priority in APNSPriority.allCases {
            #expect(expected.type.allows(priority) == expected.priorities.contains(priority), "\(priority)")
        }
        #expect(expected.type.maxPayloadSize == expected.limit)
        #expect(APNSPushType(headerValue: expected.header) == expected.type)
        #expect(expected.type.description == expected.header)
    }

    @Test func everyTypeIsListedOnce() {
        #expect(APNSPushType.allCases.count == 11)
        #expect(Set(APNSPushType.allCases).count == 11)
        #expect(APNSPushType.allCases.map(\.headerValue) == Self.table.map(\.header))
    }

    @Test func headerValuesAreExact() {
        #expect(APNSPushType(headerValue: "Alert") == nil)
        #expect(APNSPushType(headerValue: "LiveActivity") == nil)
        #expect(APNSPushType(headerValue: "") == nil)
        #expect(APNSPushType(headerValue: "webpush") == nil)
    }

    @Test func topicSuffixIsNotAddedTwice() {
        #expect(APNSPushType.voip.topic(forBundleID: "com.example.app.voip") == "com.example.app.voip")
        #expect(APNSPushType.mdm.topic(forBundleID: "com.apple.mgmt.External.1234") == "com.apple.mgmt.External.1234")
    }

    @Test func defaultPriorities() {
        #expect(APNSPushType.background.defaultPriority == .consideringDevicePower)
        for type in APNSPushType.allCases where type != .background {
            #expect(type.defaultPriority == .immediately)
        }
    }

    @Test func priorities() {
        #expect(APNSPriority.allCases.map(\.headerValue) == ["10", "5", "1"])
        #expect(APNSPriority(headerValue: "5") == .consideringDevicePower)
        #expect(APNSPriority(headerValue: "7") == nil)
        #expect(APNSPriority(headerValue: "ten") == nil)
    }
}
