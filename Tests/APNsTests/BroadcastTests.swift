import APNs
import Foundation
import HTTP2
import HeraldCore
import Testing

@Suite struct BroadcastTests {
    static let channel = APNSChannelID(rawValue: "dHN0LXNyY2gtY2hubA==")
    static let requestID = UUID(uuidString: "8A5B3C8E-1F2D-4E6A-9B7C-0D1E2F3A4B5C")!
    static let update = Array(
        #"{"aps":{"content-state":{"score":"1-0"},"event":"update","timestamp":1700000000}}"#.utf8
    )

    private func broadcast(_ change: (inout APNSBroadcastRequest) -> Void = { _ in }) -> APNSBroadcastRequest {
        var request = APNSBroadcastRequest(
            bundleID: "com.example.app",
            channelID: Self.channel,
            storagePolicy: .noMessageStored,
            payload: Self.update
        )
        change(&request)
        return request
    }

    private func code(_ request: APNSBroadcastRequest) -> APNSValidationError.Code? {
        do {
            try request.validate()
            return nil
        } catch {
            return error.code
        }
    }

    @Test func goldenSend() throws {
        let request = broadcast {
            $0.storagePolicy = .mostRecentMessageStored
            $0.expiration = .at(Date(timeIntervalSince1970: 1_700_003_600))
            $0.priority = .consideringDevicePower
            $0.requestID = Self.requestID
        }
        try request.validate()
        let http = request.httpRequest(authorization: "J.W.T")
        #expect(http.method == "POST")
        #expect(http.path == "/4/broadcasts/apps/com.example.app")
        #expect(!http.pathNeverIndexed)
        #expect(http.body == Self.update)
        #expect(
            http.headers == [
                APNSHTTPHeader(name: "authorization", value: "bearer J.W.T"),
                APNSHTTPHeader(
                    name: "apns-request-id",
                    value: "8a5b3c8e-1f2d-4e6a-9b7c-0d1e2f3a4b5c",
                    neverIndex: true
                ),
                APNSHTTPHeader(name: "apns-channel-id", value: "dHN0LXNyY2gtY2hubA=="),
                APNSHTTPHeader(name: "apns-push-type", value: "liveactivity"),
                APNSHTTPHeader(name: "apns-expiration", value: "1700003600", neverIndex: true),
                APNSHTTPHeader(name: "apns-priority", value: "5"),
            ]
        )
    }

    @Test func defaultsForAPolicy0Channel() throws {
        let request = broadcast()
        try request.validate()
        #expect(
            request.headers(authorization: nil) == [
                APNSHTTPHeader(name: "apns-channel-id", value: "dHN0LXNyY2gtY2hubA=="),
                APNSHTTPHeader(name: "apns-push-type", value: "liveactivity"),
                APNSHTTPHeader(name: "apns-expiration", value: "0"),
                APNSHTTPHeader(name: "apns-priority", value: "10"),
            ]
        )
    }

    @Test func policy0NeedsExpirationZero() throws {
        #expect(code(broadcast { $0.expiration = .at(Date(timeIntervalSince1970: 1_700_003_600)) }) == .badExpiration)
        #expect(code(broadcast { $0.expiration = .omitted }) == .badExpiration)
        #expect(
            code(
                broadcast {
                    $0.storagePolicy = .mostRecentMessageStored
                    $0.expiration = .omitted
                }
            ) == .badExpiration
        )
        try broadcast {
            $0.storagePolicy = .mostRecentMessageStored
            $0.expiration = .immediately
        }.validate()
    }

    @Test func bareBundleIDOnly() {
        #expect(code(broadcast { $0.bundleID = "com.example.app.push-type.liveactivity" }) == .badTopic)
        #expect(code(broadcast { $0.bundleID = "com.example/app" }) == .badTopic)
        #expect(code(broadcast { $0.bundleID = "" }) == .badTopic)
    }

    @Test func payloadRules() throws {
        func payload(size: Int) -> [UInt8] {
            let prefix = #"{"aps":{"event":"update","content-state":{}},"x":""#
            return Array((prefix + String(repeating: "a", count: size - prefix.utf8.count - 2) + #""}"#).utf8)
        }
        try broadcast { $0.payload = payload(size: 5120) }.validate()
        #expect(code(broadcast { $0.payload = payload(size: 5121) }) == .payloadTooLarge)
        #expect(code(broadcast { $0.payload = Array(#"{"aps":{"event":"start"}}"#.utf8) }) == .badPayload)
        #expect(code(broadcast { $0.payload = Array(#"{"aps":{}}"#.utf8) }) == .badPayload)
        #expect(code(broadcast { $0.payload = [] }) == .payloadEmpty)
        try broadcast { $0.payload = Array(#"{"aps":{"event":"end","content-state":{}}}"#.utf8) }.validate()
    }

    @Test func channelIDs() throws {
        try APNSChannelID(rawValue: "abc+/=-_09").validate()
        #expect(throws: APNSValidationError.self) { try APNSChannelID(rawValue: "").validate() }
        #expect(throws: APNSValidationError.self) { try APNSChannelID(rawValue: "a b").validate() }
        #expect(throws: APNSValidationError.self) { try APNSChannelID(rawValue: "a\nb").validate() }
        #expect(code(broadcast { $0.channelID = APNSChannelID(rawValue: "bad id") }) == .badChannelID)
    }

    @Test func typedLiveActivityPayload() throws {
        let request = try APNSBroadcastRequest(
            bundleID: "com.example.app",
            channelID: Self.channel,
            storagePolicy: .noMessageStored,
            payload: APNSLiveActivityPayload.update(
                contentState: ["score": "1-0"],
                timestamp: Date(timeIntervalSince1970: 1_700_000_000)
            )
        )
        #expect(request.payload == Self.update)
    }
}

@Suite struct ChannelRequestTests {
    @Test func create() throws {
        let request = APNSChannelRequest.create(
            bundleID: "com.example.app",
            storagePolicy: .mostRecentMessageStored,
            requestID: BroadcastTests.requestID
        )
        try request.validate()
        let http = request.httpRequest(authorization: "J.W.T")
        #expect(http.method == "POST")
        #expect(http.path == "/1/apps/com.example.app/channels")
        #expect(
            String(decoding: http.body, as: UTF8.self) == #"{"message-storage-policy":1,"push-type":"LiveActivity"}"#
        )
        #expect(
            http.headers == [
                APNSHTTPHeader(name: "authorization", value: "bearer J.W.T"),
                APNSHTTPHeader(
                    name: "apns-request-id",
                    value: "8a5b3c8e-1f2d-4e6a-9b7c-0d1e2f3a4b5c",
                    neverIndex: true
                ),
            ]
        )
        #expect(
            String(
                decoding: APNSChannelRequest.create(bundleID: "b", storagePolicy: .noMessageStored).body,
                as: UTF8.self
            ) == #"{"message-storage-policy":0,"push-type":"LiveActivity"}"#
        )
    }

    @Test func readDeleteList() throws {
        let read = APNSChannelRequest.read(bundleID: "com.example.app", channelID: BroadcastTests.channel).httpRequest(
            authorization: nil
        )
        #expect(read.method == "GET")
        #expect(read.path == "/1/apps/com.example.app/channels")
        #expect(read.headers == [APNSHTTPHeader(name: "apns-channel-id", value: "dHN0LXNyY2gtY2hubA==")])
        #expect(read.body.isEmpty)

        let delete = APNSChannelRequest.delete(bundleID: "com.example.app", channelID: BroadcastTests.channel)
            .httpRequest(authorization: nil)
        #expect(delete.method == "DELETE")
        #expect(delete.path == "/1/apps/com.example.app/channels")
        #expect(delete.headers == [APNSHTTPHeader(name: "apns-channel-id", value: "dHN0LXNyY2gtY2hubA==")])

        let list = APNSChannelRequest.listAll(bundleID: "com.example.app").httpRequest(authorization: nil)
        #expect(list.method == "GET")
        #expect(list.path == "/1/apps/com.example.app/all-channels")
        #expect(list.headers.isEmpty)
    }

    @Test func validation() {
        #expect(throws: APNSValidationError.self) {
            try APNSChannelRequest.listAll(bundleID: "com.x.push-type.liveactivity").validate()
        }
        #expect(throws: APNSValidationError.self) {
            try APNSChannelRequest.read(bundleID: "com.x", channelID: APNSChannelID(rawValue: "")).validate()
        }
    }

    @Test func responses() {
        #expect(
            APNSChannelConfiguration(parsing: Array(#"{"message-storage-policy":1,"push-type":"LiveActivity"}"#.utf8))
                == APNSChannelConfiguration(storagePolicy: .mostRecentMessageStored)
        )
        #expect(
            APNSChannelConfiguration(parsing: Array(#"{"message-storage-policy":3,"push-type":"LiveActivity"}"#.utf8))
                == nil
        )
        #expect(APNSChannelConfiguration(parsing: []) == nil)
        #expect(
            APNSChannelList.parse(Array(#"{"channels":["a","b=="]}"#.utf8)) == [
                APNSChannelID(rawValue: "a"), APNSChannelID(rawValue: "b=="),
            ]
        )
        #expect(APNSChannelList.parse(Array(#"{"channels":[]}"#.utf8)) == [])
        #expect(APNSChannelList.parse(Array(#"{"channels":[1]}"#.utf8)) == nil)
        #expect(APNSChannelList.parse(Array("nope".utf8)) == nil)
    }

    @Test("broadcasts and channel requests: the header block counts what it writes, as the request lists it")
    func headerBlocksCountWhatTheyWrite() {
        let plain = APNSBroadcastRequest(
            bundleID: "com.example.app",
            channelID: BroadcastTests.channel,
            storagePolicy: .noMessageStored,
            payload: BroadcastTests.update
        )
        var withID = plain
        withID.requestID = BroadcastTests.requestID
        withID.expiration = .at(Date(timeIntervalSince1970: 1_800_000_000))
        let broadcasts = [plain, withID]
        let channels: [APNSChannelRequest] = [
            .create(
                bundleID: "com.example.app",
                storagePolicy: .mostRecentMessageStored,
                requestID: BroadcastTests.requestID
            ),
            .read(bundleID: "com.example.app", channelID: BroadcastTests.channel),
            .delete(
                bundleID: "com.example.app",
                channelID: BroadcastTests.channel,
                requestID: BroadcastTests.requestID
            ),
            .listAll(bundleID: "com.example.app"),
        ]
        let blocks =
            broadcasts.map {
                (
                    APNSRequestHeaderFields($0, authorizationHeaderValue: "bearer J.W.T"),
                    $0.httpRequest(authorization: "J.W.T")
                )
            }
            + channels.map {
                (
                    APNSRequestHeaderFields($0, authorizationHeaderValue: "bearer J.W.T"),
                    $0.httpRequest(authorization: "J.W.T")
                )
            }
        for (block, http) in blocks {
            let expected =
                [(":path", http.path, http.pathNeverIndexed)] + http.headers.map { ($0.name, $0.value, $0.neverIndex) }
            let written = HTTP2HeaderBlockWriter.withScratch(fieldCount: block.fieldCount, byteCount: block.byteCount) {
                writer in
                block.write(into: &writer)
                return writer.writtenFields
            }
            #expect(written.count == block.fieldCount)
            #expect(written.map(\.name) == expected.map(\.0))
            #expect(written.map(\.value) == expected.map(\.1))
            #expect(written.map(\.neverIndex) == expected.map(\.2))
            #expect(block.byteCount == expected.reduce(0) { $0 + $1.0.utf8.count + $1.1.utf8.count })
        }
        // The request id is written by the same code as a device push's apns-id: lowercase.
        #expect(
            withID.headers(authorization: nil).contains {
                $0.name == "apns-request-id" && $0.value == "8a5b3c8e-1f2d-4e6a-9b7c-0d1e2f3a4b5c" && $0.neverIndex
            }
        )
    }
}
