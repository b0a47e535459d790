import APNs
import Foundation
import HeraldCore
import Testing

@Suite struct PayloadTests {
    private func json(_ payload: some APNSPayload) throws -> String {
        String(decoding: try payload.encodedPayload(), as: UTF8.self)
    }

    @Test func minimalAlert() throws {
        let payload = APNSAlertPayload(alert: APNSAlert(title: "Hello", body: "World"))
        #expect(try json(payload) == #"{"aps":{"alert":{"body":"World","title":"Hello"}}}"#)
    }

    @Test func everyAlertKey() throws {
        var alert = APNSAlert(title: "T", subtitle: "S", body: "B")
        alert.titleLocalizationKey = "TK"
        alert.titleLocalizationArguments = ["t1"]
        alert.subtitleLocalizationKey = "SK"
        alert.subtitleLocalizationArguments = ["s1", "s2"]
        alert.localizationKey = "BK"
        alert.localizationArguments = ["b1"]
        alert.launchImage = "launch.png"
        let payload = APNSAlertPayload(
            alert: alert,
            sound: .critical(name: "alarm.caf", volume: 0.5),
            badge: 3,
            threadID: "orders",
            category: "ORDER",
            mutableContent: true,
            contentAvailable: true,
            interruptionLevel: .timeSensitive,
            relevanceScore: 0.75,
            targetContentID: "window-1",
            filterCriteria: "work",
            custom: ["order_id": "A-1042", "n": 7, "urls": ["https://example.com/a"]]
        )
        let expected =
            #"{"aps":{"alert":{"body":"B","launch-image":"launch.png","loc-args":["b1"],"loc-key":"BK","#
            + #""subtitle":"S","subtitle-loc-args":["s1","s2"],"subtitle-loc-key":"SK","title":"T","#
            + #""title-loc-args":["t1"],"title-loc-key":"TK"},"badge":3,"category":"ORDER","#
            + #""content-available":1,"filter-criteria":"work","interruption-level":"time-sensitive","#
            + #""mutable-content":1,"relevance-score":0.75,"sound":{"critical":1,"name":"alarm.caf","volume":0.5},"#
            + #""target-content-id":"window-1","thread-id":"orders"},"n":7,"order_id":"A-1042","#
            + #""urls":["https://example.com/a"]}"#
        #expect(try json(payload) == expected)
    }

    @Test func soundAsNameAndFalseFlagsOmitted() throws {
        let payload = APNSAlertPayload(sound: .default, badge: 0)
        #expect(try json(payload) == #"{"aps":{"badge":0,"sound":"default"}}"#)
    }

    @Test func interruptionLevels() throws {
        let levels: [APNSInterruptionLevel] = [.passive, .active, .timeSensitive, .critical]
        #expect(levels.map(\.rawValue) == ["passive", "active", "time-sensitive", "critical"])
    }

    @Test func criticalVolumeOutOfRangeFails() {
        let payload = APNSAlertPayload(sound: .critical(name: "a", volume: 1.5))
        #expect(throws: EncodingError.self) { try payload.encodedPayload() }
    }

    @Test func customKeyNamedAPSFails() {
        #expect(throws: EncodingError.self) { try APNSAlertPayload(custom: ["aps": [:]]).encodedPayload() }
        #expect(throws: EncodingError.self) { try APNSBackgroundPayload(custom: ["aps": 1]).encodedPayload() }
    }

    @Test func background() throws {
        #expect(try json(APNSBackgroundPayload()) == #"{"aps":{"content-available":1}}"#)
        #expect(
            try json(APNSBackgroundPayload(custom: ["sync": ["since": 42]]))
                == #"{"aps":{"content-available":1},"sync":{"since":42}}"#
        )
    }

    @Test func contentChanged() throws {
        #expect(try json(APNSContentChangedPayload()) == #"{"aps":{"content-changed":true}}"#)
    }

    @Test func rawPassthroughIsByteForByte() throws {
        let text = #"{ "aps" : { "alert" : "x" }, "z": 1.50 }"#
        #expect(try APNSRawPayload(text).encodedPayload() == Array(text.utf8))
    }

    static let now = Date(timeIntervalSince1970: 1_700_000_000.75)

    @Test func liveActivityUpdate() throws {
        let payload = APNSLiveActivityPayload.update(
            contentState: ["score": "2-1", "minute": 67, "ratio": 0.5, "final": false, "note": nil],
            timestamp: Self.now,
            staleDate: Self.now.addingTimeInterval(600),
            relevanceScore: 100
        )
        #expect(
            try json(payload)
                == #"{"aps":{"content-state":{"final":false,"minute":67,"note":null,"ratio":0.5,"score":"2-1"},"#
                + #""event":"update","relevance-score":100,"stale-date":1700000600,"timestamp":1700000000}}"#
        )
    }

    @Test func liveActivityStart() throws {
        let payload = APNSLiveActivityPayload.start(
            attributesType: "MatchAttributes",
            attributes: ["home": "Lions", "away": "Bears"],
            contentState: ["score": "0-0"],
            alert: APNSLiveActivityAlert(
                title: .localized(key: "%@ kicked off", arguments: ["Lions"]),
                body: "Follow the match",
                sound: .named("whistle.caf")
            ),
            timestamp: Self.now,
            inputPushToken: true,
            inputPushChannel: "dHN0LXNyY2gtY2hubA=="
        )
        #expect(
            try json(payload)
                == #"{"aps":{"alert":{"body":"Follow the match","sound":"whistle.caf","#
                + #""title":{"loc-args":["Lions"],"loc-key":"%@ kicked off"}},"#
                + #""attributes":{"away":"Bears","home":"Lions"},"attributes-type":"MatchAttributes","#
                + #""content-state":{"score":"0-0"},"event":"start","input-push-channel":"dHN0LXNyY2gtY2hubA==","#
                + #""input-push-token":1,"timestamp":1700000000}}"#
        )
    }

    @Test func liveActivityEnd() throws {
        var payload = APNSLiveActivityPayload.end(
            contentState: ["score": "3-1"],
            timestamp: Self.now,
            dismissalDate: Date(timeIntervalSince1970: 1_700_003_600)
        )
        payload.custom = ["match": 9]
        #expect(
            try json(payload)
                == #"{"aps":{"content-state":{"score":"3-1"},"dismissal-date":1700003600,"event":"end","#
                + #""timestamp":1700000000},"match":9}"#
        )
    }

    @Test("a Live Activity payload is written directly: the same bytes JSONEncoder wrote, content as given")
    func liveActivityWrittenDirectly() throws {
        var payload = APNSLiveActivityPayload.update(
            contentState: ["progress": .double(1), "label": "a/b \"c\" é\n", "steps": [1, 2.5]],
            timestamp: Self.now,
            alert: APNSLiveActivityAlert(
                title: .localized(key: "step", arguments: ["2", "3"]),
                body: .localized(key: "signed"),
                sound: .critical(name: "bell.caf", volume: 1)
            ),
            relevanceScore: 0.75
        )
        payload.custom = ["ref": 7]
        #expect(
            try json(payload)
                == #"{"aps":{"alert":{"body":{"loc-key":"signed"},"sound":{"critical":1,"name":"bell.caf","volume":1},"#
                + #""title":{"loc-args":["2","3"],"loc-key":"step"}},"content-state":{"label":"a/b \"c\" é\n","#
                + #""progress":1.0,"steps":[1,2.5]},"event":"update","relevance-score":0.75,"timestamp":1700000000},"#
                + #""ref":7}"#
        )
        // Through JSONEncoder (its Encodable conformance) the same value, but for the whole double
        // in the content, which JSONEncoder writes without its fraction.
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let encoded = String(decoding: try encoder.encode(payload), as: UTF8.self)
        #expect(encoded == (try json(payload)).replacingOccurrences(of: #""progress":1.0"#, with: #""progress":1"#))
        payload.alert?.sound = .critical(name: "bell.caf", volume: 2)
        #expect(throws: EncodingError.self) { try payload.encodedPayload() }
        payload.alert = nil
        payload.custom = ["aps": 1]
        #expect(throws: EncodingError.self) { try payload.encodedPayload() }
    }

    @Test func liveActivityRules() {
        func field(_ payload: APNSLiveActivityPayload) -> String? {
            do {
                try payload.validate()
                return nil
            } catch {
                return error.field
            }
        }
        let state: APNSJSONValue = ["a": 1]
        #expect(
            field(APNSLiveActivityPayload(event: .start, timestamp: Self.now, contentState: state))
                == "payload.aps.attributes-type"
        )
        #expect(
            field(APNSLiveActivityPayload(event: .start, timestamp: Self.now, contentState: state, attributesType: "A"))
                == "payload.aps.attributes"
        )
        #expect(
            field(
                APNSLiveActivityPayload(
                    event: .start,
                    timestamp: Self.now,
                    contentState: state,
                    attributesType: "A",
                    attributes: [:]
                )
            ) == "payload.aps.alert"
        )
        #expect(field(.update(contentState: "text", timestamp: Self.now)) == "payload.aps.content-state")
        #expect(
            field(
                APNSLiveActivityPayload(event: .update, timestamp: Self.now, contentState: state, inputPushToken: true)
            )
                == "payload.aps.input-push-token"
        )
        #expect(
            field(APNSLiveActivityPayload(event: .end, timestamp: Self.now, contentState: state, inputPushChannel: "c"))
                == "payload.aps.input-push-channel"
        )
        #expect(field(.update(contentState: state, timestamp: Self.now)) == nil)
        #expect(throws: APNSValidationError.self) {
            try APNSLiveActivityPayload(event: .start, timestamp: Self.now, contentState: state).encodedPayload()
        }
    }
}

@Suite struct JSONValueTests {
    @Test func roundTripKeepsNumberKinds() throws {
        let text = #"{"a":1,"b":1.5,"c":true,"d":null,"e":"x","f":[1,"2",false],"g":{"h":-3},"i":1e400}"#
        let value = try? APNSJSONValue(parsing: Array(text.utf8))
        #expect(value == nil, "1e400 is not a finite number")
        let finite = try APNSJSONValue(
            parsing: Array(#"{"a":1,"b":1.5,"c":true,"d":null,"e":"x","f":[1,"2",false],"g":{"h":-3}}"#.utf8)
        )
        #expect(finite["a"] == .integer(1))
        #expect(finite["b"] == .double(1.5))
        #expect(finite["c"] == .bool(true))
        #expect(finite["d"] == .null)
        #expect(finite["f"] == [1, "2", false])
        #expect(finite["g"]?["h"] == .integer(-3))
        #expect(
            String(decoding: try finite.encodedPayload(), as: UTF8.self)
                == #"{"a":1,"b":1.5,"c":true,"d":null,"e":"x","f":[1,"2",false],"g":{"h":-3}}"#
        )
    }

    @Test func strictJSONIsAccepted() throws {
        let nested = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        for text in [
            #" { "a" : [ 1 , -0.5e+3 , 2E-2 , 0 , "\u00e9\n\"" , true , false , null , { } , [ ] ] } "#, "{}", nested,
            "{\"é\":\"🎉\"}",
        ] {
            _ = try APNSJSONValue(parsing: Array(text.utf8))
        }
    }

    @Test func garbageIsRefused() {
        let nested = String(repeating: "[", count: 65) + String(repeating: "]", count: 65)
        for text in [
            "", "{", "{'a':1}", "[1,]", #"{"a":1,}"#, #"{"a":1} x"#, #"{"a":01}"#, #"{"a":1.}"#, #"{"a":.5}"#,
            #"{"a":+1}"#, #"{"a":tru}"#, #"{"a":"\x"}"#, #"{"a":"\u12G4"}"#, "{\"a\":\"\u{1}\"}", #"{"a" 1}"#,
            #"{a:1}"#, "{\"a\":1}\u{0}", #"{"a":NaN}"#, nested, "tru", "nul", "fals", "1 2", #""\ud800""#,
            #""\udc00\ud800""#, "1e999", #"{"a":1,"a":2}"#, "\u{FEFF}{}",
        ] {
            #expect((try? APNSJSONValue(parsing: Array(text.utf8))) == Optional.none, "\(text)")
        }
    }
}
