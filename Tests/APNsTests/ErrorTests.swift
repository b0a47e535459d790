import APNs
import Foundation
import Testing

@Suite struct ErrorReasonTests {
    /// Every reason string in APNS.md §7 and §8, with the category Herald gives it.
    static let documented: [(String, APNSFailureCategory)] = [
        // §8, 400
        ("BadCollapseId", .invalidRequest), ("BadDeviceToken", .deviceTokenInvalid),
        ("BadExpirationDate", .invalidRequest), ("BadMessageId", .invalidRequest), ("BadPriority", .invalidRequest),
        ("BadTopic", .configuration), ("DeviceTokenNotForTopic", .deviceTokenInvalid),
        ("DuplicateHeaders", .invalidRequest), ("IdleTimeout", .retryable), ("InvalidPushType", .invalidRequest),
        ("MissingDeviceToken", .invalidRequest), ("MissingTopic", .configuration), ("PayloadEmpty", .invalidRequest),
        ("TopicDisallowed", .configuration),
        // §8, 403
        ("BadCertificate", .configuration), ("BadCertificateEnvironment", .configuration),
        ("ExpiredProviderToken", .providerTokenExpired), ("Forbidden", .configuration),
        ("InvalidProviderToken", .configuration), ("MissingProviderToken", .configuration),
        ("UnrelatedKeyIdInToken", .configuration), ("BadEnvironmentKeyIdInToken", .configuration),
        ("BadEnvironmentKeyInToken", .configuration),
        // §8, 404 405 410 413 429 500 503
        ("BadPath", .invalidRequest), ("MethodNotAllowed", .invalidRequest), ("ExpiredToken", .deviceTokenInvalid),
        ("Unregistered", .deviceTokenInvalid), ("PayloadTooLarge", .invalidRequest),
        ("TooManyProviderTokenUpdates", .retryable), ("TooManyRequests", .retryable),
        ("InternalServerError", .retryable), ("ServiceUnavailable", .retryable), ("Shutdown", .retryable),
        // §7 broadcast
        ("FeatureNotEnabled", .configuration), ("MissingChannelId", .invalidRequest),
        ("BadChannelId", .invalidRequest), ("ChannelNotRegistered", .channelInvalid),
        ("BadRequestParams", .invalidRequest), ("BadRequestPayload", .invalidRequest),
        ("MissingPushType", .invalidRequest), ("CannotCreateChannelConfig", .invalidRequest),
        ("TopicMismatch", .configuration), ("Service Unavailable", .retryable),
    ]

    @Test func everyDocumentedReasonIsKnownAndClassified() {
        for (raw, category) in Self.documented {
            let reason = APNSErrorReason(rawValue: raw)
            #expect(reason.isKnown, "\(raw)")
            #expect(reason.category(status: 400) == category, "\(raw)")
            #expect(reason.metricLabel == raw)
        }
        #expect(Set(APNSErrorReason.allKnown.map(\.rawValue)) == Set(Self.documented.map(\.0)))
    }

    @Test func staticMembersSpellAppleStrings() {
        #expect(APNSErrorReason.badEnvironmentKeyIdInToken.rawValue == "BadEnvironmentKeyIdInToken")
        #expect(APNSErrorReason.badEnvironmentKeyInToken.rawValue == "BadEnvironmentKeyInToken")
        #expect(APNSErrorReason.unregistered.rawValue == "Unregistered")
        #expect(APNSErrorReason.expiredProviderToken.rawValue == "ExpiredProviderToken")
        #expect(APNSErrorReason.badCollapseId == APNSErrorReason(rawValue: "BadCollapseId"))
    }

    @Test func unknownReasonsKeepTheirTextAndFallBackOnStatus() {
        let reason = APNSErrorReason.unknown("SomethingNew")
        #expect(reason.rawValue == "SomethingNew")
        #expect(!reason.isKnown)
        #expect(reason.metricLabel == "other")
        #expect(reason.category(status: 429) == .retryable)
        #expect(reason.category(status: 502) == .retryable)
        #expect(reason.category(status: 503) == .retryable)
        #expect(reason.category(status: 410) == .deviceTokenInvalid)
        #expect(reason.category(status: 403) == .configuration)
        #expect(reason.category(status: 400) == .invalidRequest)
        #expect(reason.category(status: 302) == .unknown)
        #expect(APNSErrorReason.unknown.metricLabel == "Unknown")
    }

    @Test func tokenDeadReasons() {
        #expect(APNSErrorReason.unregistered.isDeviceTokenInvalid)
        #expect(APNSErrorReason.badDeviceToken.isDeviceTokenInvalid)
        #expect(APNSErrorReason.deviceTokenNotForTopic.isDeviceTokenInvalid)
        #expect(APNSErrorReason.expiredToken.isDeviceTokenInvalid)
        #expect(!APNSErrorReason.badTopic.isDeviceTokenInvalid)
    }
}

@Suite struct ErrorResponseTests {
    private func response(_ status: Int, _ body: String, headers: [APNSHTTPHeader] = []) -> APNSErrorResponse {
        APNSErrorResponse(APNSHTTPResponse(status: status, headers: headers, body: Array(body.utf8)))
    }

    @Test func unregisteredWithTimestamp() {
        let id = UUID()
        let parsed = response(
            410,
            #"{"reason":"Unregistered","timestamp":1700000000123}"#,
            headers: [APNSHTTPHeader(name: "apns-id", value: id.uuidString.lowercased())]
        )
        #expect(parsed.status == 410)
        #expect(parsed.reason == .unregistered)
        #expect(parsed.timestamp == Date(timeIntervalSince1970: 1_700_000_000.123))
        #expect(parsed.apnsID == id)
        #expect(parsed.category == .deviceTokenInvalid)
        #expect(parsed.description == "410 Unregistered since 1700000000123ms")
    }

    @Test func timestampAsStringOrFraction() {
        #expect(
            response(410, #"{"reason":"Unregistered","timestamp":"1700000000000"}"#).timestamp
                == Date(timeIntervalSince1970: 1_700_000_000)
        )
        #expect(
            response(410, #"{"reason":"Unregistered","timestamp":1700000000000.0}"#).timestamp
                == Date(timeIntervalSince1970: 1_700_000_000)
        )
        #expect(response(410, #"{"reason":"Unregistered","timestamp":-5}"#).timestamp == nil)
        #expect(response(410, #"{"reason":"Unregistered","timestamp":"soon"}"#).timestamp == nil)
        #expect(response(410, #"{"reason":"Unregistered","timestamp":true}"#).timestamp == nil)
    }

    /// A timestamp past year 9999 (Int64.max milliseconds trapped when the refusal was described)
    /// is treated as absent; the last millisecond of 9999 is still a time.
    @Test(arguments: ["9223372036854775807", "\"9223372036854775807\"", "253402300800000"])
    func timestampBeyondYear9999IsAbsent(timestamp: String) {
        let parsed = response(410, #"{"reason":"Unregistered","timestamp":\#(timestamp)}"#)
        #expect(parsed.timestamp == nil)
        #expect(parsed.description == "410 Unregistered")
        let last = response(410, #"{"reason":"Unregistered","timestamp":253402300799999}"#)
        #expect(last.description == "410 Unregistered since 253402300799999ms")
    }

    @Test(arguments: [
        "", "not json", "[]", #"{"reason":5}"#, #"{"reason":""}"#, #"{"other":"x"}"#, "{\"reason\":\"Bad",
    ])
    func unreadableBodiesKeepTheStatus(body: String) {
        let parsed = response(503, body)
        #expect(parsed.status == 503)
        #expect(parsed.reason == .unknown)
        #expect(parsed.timestamp == nil)
        #expect(parsed.category == .retryable)
    }

    @Test func hugeBodiesAreNotRead() {
        let body = #"{"reason":"BadTopic","pad":""# + String(repeating: "x", count: 70_000) + #""}"#
        #expect(response(400, body).reason == .unknown)
    }

    @Test func retryAfterAndRequestID() {
        let requestID = UUID()
        let parsed = response(
            429,
            #"{"reason":"TooManyRequests"}"#,
            headers: [
                APNSHTTPHeader(name: "Retry-After", value: "2"),
                APNSHTTPHeader(name: "apns-request-id", value: requestID.uuidString),
            ]
        )
        #expect(parsed.retryAfter == .seconds(2))
        #expect(parsed.requestID == requestID)
        #expect(
            response(429, "", headers: [APNSHTTPHeader(name: "retry-after", value: "Fri, 31 Dec 1999 23:59:59 GMT")])
                .retryAfter == nil
        )
    }

    @Test func goawayPayloadsParseTheSameWay() {
        let body = APNSErrorBody(parsing: Array(#"{"reason":"BadCertificateEnvironment"}"#.utf8))
        #expect(body.reason == .badCertificateEnvironment)
        #expect(APNSErrorBody(parsing: []).reason == nil)
    }
}
