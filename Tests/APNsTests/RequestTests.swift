import APNs
import Foundation
import HTTP2
import Testing

@Suite struct RequestValidationTests {
    private func request(_ change: (inout APNSRequest) -> Void = { _ in }) -> APNSRequest {
        var request = Fixtures.alertRequest()
        change(&request)
        return request
    }

    private func code(_ request: APNSRequest) -> APNSValidationError.Code? {
        do {
            try request.validate()
            return nil
        } catch {
            return error.code
        }
    }

    @Test func aWellFormedRequestPasses() throws {
        try request().validate()
        try request { $0.deviceToken = $0.deviceToken.uppercased() }.validate()
        try request { $0.deviceToken = String(repeating: "ab", count: 100) }.validate()
    }

    @Test(arguments: [
        "", "abc", String(repeating: "a", count: 63), String(repeating: "a", count: 65),
        String(repeating: "ab", count: 101), String(repeating: "g", count: 64),
        String(repeating: "a", count: 62) + " a", String(repeating: "é", count: 32),
    ])
    func badDeviceTokens(token: String) {
        #expect(code(request { $0.deviceToken = token }) == .badDeviceToken)
    }

    @Test func deviceTokenIsNormalisedToLowercase() throws {
        let upper = Fixtures.token.uppercased()
        #expect(try APNSDeviceToken.normalized(upper) == Fixtures.token)
        #expect(request { $0.deviceToken = upper }.path == "/3/device/" + Fixtures.token)
    }

    @Test func tokenErrorsDoNotRepeatTheToken() {
        let token = String(repeating: "abcdefgh", count: 8)
        do {
            _ = try APNSDeviceToken.normalized(token)
            Issue.record("expected an error")
        } catch {
            #expect(error.field == "device_token")
            #expect(!error.message.contains("abcdefgh"))
        }
        #expect(APNSDeviceToken.shortened(Fixtures.token) == "01234567…")
    }

    @Test func payloadRules() {
        #expect(code(request { $0.payload = [] }) == .payloadEmpty)
        #expect(code(request { $0.payload = Array("[1,2]".utf8) }) == .payloadNotJSONObject)
        #expect(code(request { $0.payload = Array(#""aps""#.utf8) }) == .payloadNotJSONObject)
        #expect(code(request { $0.payload = Array(#"{"aps":"#.utf8) }) == .payloadNotJSONObject)
        #expect(code(request { $0.payload = [0x7B, 0xFF, 0x7D] }) == .payloadNotJSONObject)
    }

    @Test func payloadSizeDependsOnThePushType() throws {
        func payload(size: Int) -> [UInt8] {
            let prefix = #"{"aps":{},"x":""#
            return Array((prefix + String(repeating: "a", count: size - prefix.utf8.count - 2) + #""}"#).utf8)
        }
        #expect(payload(size: 4096).count == 4096)
        try request { $0.payload = payload(size: 4096) }.validate()
        #expect(code(request { $0.payload = payload(size: 4097) }) == .payloadTooLarge)
        let voip = request {
            $0.pushType = .voip
            $0.payload = payload(size: 5120)
        }
        try voip.validate()
        #expect(
            code(
                request {
                    $0.pushType = .voip
                    $0.payload = payload(size: 5121)
                }
            ) == .payloadTooLarge
        )
    }

    @Test func collapseIDIsAtMost64Bytes() throws {
        try request { $0.collapseID = String(repeating: "a", count: 64) }.validate()
        #expect(code(request { $0.collapseID = String(repeating: "a", count: 65) }) == .badCollapseID)
        // 22 three-byte characters: 66 bytes, 22 characters.
        #expect(code(request { $0.collapseID = String(repeating: "€", count: 22) }) == .badCollapseID)
        try request { $0.collapseID = String(repeating: "€", count: 21) }.validate()
        #expect(code(request { $0.collapseID = "" }) == .badCollapseID)
        #expect(code(request { $0.collapseID = "a\r\nb" }) == .badCollapseID)
        #expect(code(request { $0.collapseID = " padded" }) == .badCollapseID)
    }

    @Test func backgroundOnlyAtPriority5() throws {
        let background = request {
            $0.pushType = .background
            $0.payload = Array(#"{"aps":{"content-available":1},"sync":true}"#.utf8)
        }
        try background.validate()
        #expect(background.effectivePriority == .consideringDevicePower)
        var immediate = background
        immediate.priority = .immediately
        #expect(code(immediate) == .badPriority)
        do {
            try immediate.validate()
        } catch {
            #expect(error.message.contains("use 5"))
        }
    }

    @Test func backgroundPayloadRules() {
        func background(_ json: String) -> APNSRequest {
            request {
                $0.pushType = .background
                $0.payload = Array(json.utf8)
            }
        }
        #expect(code(background(#"{"aps":{}}"#)) == .badPayload)
        #expect(code(background(#"{"aps":{"content-available":true}}"#)) == .badPayload)
        #expect(code(background(#"{"aps":{"content-available":1,"alert":"x"}}"#)) == .badPayload)
        #expect(code(background(#"{"aps":{"content-available":1,"badge":1}}"#)) == .badPayload)
        #expect(code(background(#"{"aps":{"content-available":1,"sound":"a"}}"#)) == .badPayload)
    }

    @Test func priorityMustBeAllowedForTheType() throws {
        #expect(
            code(
                request {
                    $0.pushType = .liveActivity
                    $0.topic = .bundleID(Fixtures.bundleID)
                    $0.priority = .prioritizingPower
                }
            ) == .badPriority
        )
        #expect(
            code(
                request {
                    $0.pushType = .location
                    $0.priority = .prioritizingPower
                }
            ) == .badPriority
        )
        try request { $0.priority = .prioritizingPower }.validate()
    }

    @Test func topicMustBePresentAndClean() {
        #expect(code(request { $0.topic = .bundleID("") }) == .badTopic)
        #expect(code(request { $0.topic = .explicit("") }) == .badTopic)
        #expect(code(request { $0.topic = .bundleID("com.example app") }) == .badTopic)
        #expect(code(request { $0.topic = .explicit("com.example\r\nx: y") }) == .badTopic)
    }

    @Test func expirationBefore1970IsRefused() throws {
        #expect(code(request { $0.expiration = .at(Date(timeIntervalSince1970: 0)) }) == .badExpiration)
        #expect(code(request { $0.expiration = .at(Date(timeIntervalSince1970: -5)) }) == .badExpiration)
        try request { $0.expiration = .at(Date(timeIntervalSince1970: 1)) }.validate()
        try request { $0.expiration = .immediately }.validate()
    }

    @Test func topicIsDerivedFromThePushTypeUnlessExplicit() {
        var request = Fixtures.alertRequest()
        request.pushType = .voip
        #expect(request.resolvedTopic == "com.example.app.voip")
        request.topic = .explicit("com.other.voip")
        #expect(request.resolvedTopic == "com.other.voip")
    }
}

@Suite struct RequestHeaderTests {
    static let id = UUID(uuidString: "8A5B3C8E-1F2D-4E6A-9B7C-0D1E2F3A4B5C")!

    @Test func everyHeaderInOrder() {
        let request = APNSRequest(
            deviceToken: Fixtures.token.uppercased(),
            pushType: .liveActivity,
            topic: .bundleID("com.example.app"),
            payload: Array(#"{"aps":{}}"#.utf8),
            id: Self.id,
            expiration: .at(Date(timeIntervalSince1970: 1_700_000_123.9)),
            priority: .consideringDevicePower,
            collapseID: "score"
        )
        let http = request.httpRequest(authorization: "HEADER.CLAIMS.SIG")
        #expect(http.method == "POST")
        #expect(http.path == "/3/device/" + Fixtures.token)
        #expect(http.pathNeverIndexed)
        #expect(http.body == Array(#"{"aps":{}}"#.utf8))
        #expect(
            http.headers == [
                APNSHTTPHeader(name: "authorization", value: "bearer HEADER.CLAIMS.SIG"),
                APNSHTTPHeader(name: "apns-id", value: "8a5b3c8e-1f2d-4e6a-9b7c-0d1e2f3a4b5c", neverIndex: true),
                APNSHTTPHeader(name: "apns-push-type", value: "liveactivity"),
                APNSHTTPHeader(name: "apns-expiration", value: "1700000123", neverIndex: true),
                APNSHTTPHeader(name: "apns-priority", value: "5"),
                APNSHTTPHeader(name: "apns-topic", value: "com.example.app.push-type.liveactivity"),
                APNSHTTPHeader(name: "apns-collapse-id", value: "score"),
            ]
        )
    }

    @Test func minimalHeadersWithoutAuthorization() {
        let request = APNSRequest(
            deviceToken: Fixtures.token,
            pushType: .background,
            topic: .bundleID("com.example.app"),
            payload: Array(#"{"aps":{"content-available":1}}"#.utf8),
            id: Self.id
        )
        #expect(
            request.headers(authorization: nil) == [
                APNSHTTPHeader(name: "apns-id", value: "8a5b3c8e-1f2d-4e6a-9b7c-0d1e2f3a4b5c", neverIndex: true),
                APNSHTTPHeader(name: "apns-push-type", value: "background"),
                APNSHTTPHeader(name: "apns-priority", value: "5"),
                APNSHTTPHeader(name: "apns-topic", value: "com.example.app"),
            ]
        )
    }

    @Test func immediateExpirationIsIndexable() {
        var request = Fixtures.alertRequest()
        request.expiration = .immediately
        let header = request.headers(authorization: nil).first { $0.name == "apns-expiration" }
        #expect(header == APNSHTTPHeader(name: "apns-expiration", value: "0"))
    }

    @Test func pseudoHeadersComeFirst() {
        var request = Fixtures.alertRequest()
        request.id = Self.id
        let list = request.httpRequest(authorization: "J.W.T").headerList(
            scheme: "https",
            authority: "api.push.apple.com"
        )
        #expect(
            Array(list.prefix(5)) == [
                APNSHTTPHeader(name: ":method", value: "POST"),
                APNSHTTPHeader(name: ":scheme", value: "https"),
                APNSHTTPHeader(name: ":authority", value: "api.push.apple.com"),
                APNSHTTPHeader(name: ":path", value: "/3/device/" + Fixtures.token, neverIndex: true),
                APNSHTTPHeader(name: "authorization", value: "bearer J.W.T"),
            ]
        )
        #expect(list.count == 9)
    }

    /// The pool's direct path writes the header block itself; it must match ``httpRequest``
    /// field for field (names, values, order, never-indexed flags), whatever the request holds.
    @Test(
        arguments: [
            (APNSPushType.liveActivity, APNSExpiration.at(Date(timeIntervalSince1970: 1_700_000_123.9)), "score", "T"),
            (.alert, .omitted, nil, nil),
            (.background, .immediately, nil, "HEADER.CLAIMS.SIG"),
            (.voip, .at(Date(timeIntervalSince1970: 1_800_000_000)), "x", nil),
        ] as [(APNSPushType, APNSExpiration, String?, String?)]
    )
    func directHeaderBlockMatchesHTTPRequest(
        pushType: APNSPushType,
        expiration: APNSExpiration,
        collapseID: String?,
        token: String?
    ) {
        let request = APNSRequest(
            deviceToken: Fixtures.token.uppercased(),
            pushType: pushType,
            topic: .bundleID("com.example.app"),
            payload: Array(#"{"aps":{}}"#.utf8),
            expiration: expiration,
            collapseID: collapseID
        )
        let authorization = token.map { "bearer " + $0 }
        let http = request.httpRequest(authorization: token)
        let expected =
            [(":path", http.path, http.pathNeverIndexed)] + http.headers.map { ($0.name, $0.value, $0.neverIndex) }
        let block = APNSRequestHeaderFields(request, authorizationHeaderValue: authorization)
        let written = HTTP2HeaderBlockWriter.withScratch(fieldCount: block.fieldCount, byteCount: block.byteCount) {
            writer in
            block.write(into: &writer)
            return writer.writtenFields
        }
        #expect(written.count == block.fieldCount)
        #expect(written.map(\.name) == expected.map(\.0))
        #expect(written.map(\.value) == expected.map(\.1))
        #expect(written.map(\.neverIndex) == expected.map(\.2))
        let byteCount = expected.reduce(0) { $0 + $1.0.utf8.count + $1.1.utf8.count }
        #expect(block.byteCount == byteCount)
    }

    @Test func authorizationIsRedactedInDescriptions() {
        let http = Fixtures.alertRequest().httpRequest(authorization: "SECRET.JWT.VALUE")
        #expect(!http.description.contains("SECRET"))
        #expect(!String(describing: http.headers).contains("SECRET"))
        var dumped = ""
        dump(http.headers[0], to: &dumped)
        #expect(!dumped.contains("SECRET"))
        #expect(http.headers[0].description == "authorization: <redacted>")
    }

    @Test func typedPayloadInitialiser() throws {
        let request = try APNSRequest(
            deviceToken: Fixtures.token,
            pushType: .widgets,
            topic: .bundleID(Fixtures.bundleID),
            payload: APNSContentChangedPayload()
        )
        #expect(String(decoding: request.payload, as: UTF8.self) == #"{"aps":{"content-changed":true}}"#)
        try request.validate()
    }
}
