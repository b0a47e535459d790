import APNs
import Foundation
import HTTPRouting
import HeraldCore
import HeraldFeature
import Testing

@testable import Channels

/// The strict reading of `/v1/channels` bodies and ids, and APNs' answers as refusals, without a
/// server, a socket or APNs.
@Suite struct ChannelInputTests {
    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// A request as the router hands it over for `/v1/channels/{id}`.
    static func request(id: String) -> HTTPRequest {
        var request = HTTPRequest(path: "/v1/channels/x")
        request.parameters = ["id": id]
        return request
    }

    static func refusal(_ body: () throws(ChannelError) -> Void) -> ChannelError? {
        do {
            try body()
            return nil
        } catch {
            return error
        }
    }

    @Test func aChannelIsReadWithItsPolicyAndEnvironment() throws {
        let create = try ChannelInput.create(Self.bytes(#"{"storage_policy": 1, "environment": "sandbox"}"#))
        #expect(create.storagePolicy == .mostRecentMessageStored)
        #expect(create.environment == .sandbox)
        #expect(create.app == nil)
    }

    @Test(
        "each mistake is a 400 or 413 naming its field",
        arguments: [
            (#"{"storage_policy": 0, "colour": 1}"#, "unknown_field", "colour", 400),
            (#"{"storage_policy": 2}"#, "invalid_storage_policy", "storage_policy", 400),
            (#"{"storage_policy": 0, "environment": "staging"}"#, "invalid_environment", "environment", 400),
            (#"{"storage_policy": 0, "storage_policy": 1}"#, "duplicate_key", "storage_policy", 400),
            ("[]", "invalid_json", nil, 400),
            (String(repeating: " ", count: 16 * 1024 + 1), "body_too_large", nil, 413),
        ] as [(String, String, String?, Int)]
    )
    func mistakesAreRefused(body: String, code: String, field: String?, status: Int) {
        let error = Self.refusal { () throws(ChannelError) in _ = try ChannelInput.create(Self.bytes(body)) }
        #expect(error?.code == code)
        #expect(error?.field == field)
        #expect(error?.httpStatus == status)
    }

    @Test func aBroadcastReadsItsTimesAndRefusesMilliseconds() throws {
        let broadcast = try ChannelInput.broadcast(
            Self.bytes(#"{"event": "end", "content_state": {"step": 3}, "dismissal_date": 1900000000, "priority": 5}"#)
        )
        #expect(broadcast.event == .end)
        #expect(broadcast.priority == .consideringDevicePower)
        #expect(broadcast.dismissalDate == Date(timeIntervalSince1970: 1_900_000_000))
        let error = Self.refusal { () throws(ChannelError) in
            _ = try ChannelInput.broadcast(
                Self.bytes(#"{"event": "update", "content_state": {}, "stale_date": 1900000000000}"#)
            )
        }
        #expect(error?.code == "invalid_stale_date")
        #expect(error?.message.contains("milliseconds") == true)
    }

    @Test func aChannelIDIsReadFromBase64URLOrPercentEncoding() throws {
        let base64URL = try ChannelInput.channelID(Self.request(id: "dGVzdC1jaGFubmVs-_8"))
        #expect(base64URL.rawValue == "dGVzdC1jaGFubmVs+/8=")
        let error = Self.refusal { () throws(ChannelError) in _ = try ChannelInput.channelID(Self.request(id: "!!")) }
        #expect(error?.code == "unknown_channel")
        #expect(error?.httpStatus == 404)
    }

    @Test(
        "APNs' answers keep today's statuses and codes",
        arguments: [
            (400, "ChannelNotRegistered", 404, "unknown_channel"),
            (400, "CannotCreateChannelConfig", 409, "channel_limit_reached"),
            (400, "FeatureNotEnabled", 422, "broadcast_not_enabled"),
            (413, "PayloadTooLarge", 413, "payload_too_large"),
            (400, "BadExpirationDate", 400, "apns_rejected"),
            (403, "InvalidProviderToken", 502, "apns_credentials_rejected"),
            (429, "TooManyRequests", 503, "apns_unavailable"),
            (500, "InternalServerError", 503, "apns_unavailable"),
            (404, "BadPath", 502, "apns_rejected"),
        ] as [(Int, String, Int, String)]
    )
    func apnsAnswers(status: Int, reason: String, expected: Int, code: String) {
        let rejection = APNSRejection(
            response: APNSErrorResponse(status: status, reason: APNSErrorReason(rawValue: reason))
        )
        let error = ChannelError.apns(rejection)
        #expect(error.httpStatus == expected)
        #expect(error.code == code)
        #expect(error.response.headers["Retry-After"] == (expected == 503 ? "5" : nil))
    }

    @Test func broadcastTimestampsIncreasePerChannel() {
        let clock = ManualClock(Date(timeIntervalSince1970: 2_000_000_000))
        let timestamps = BroadcastTimestamps(clock: clock)
        let first = timestamps.next(app: "a", channel: "c", requested: nil)
        let second = timestamps.next(app: "a", channel: "c", requested: nil)
        let other = timestamps.next(app: "a", channel: "d", requested: nil)
        #expect(first == Date(timeIntervalSince1970: 2_000_000_000))
        #expect(second == Date(timeIntervalSince1970: 2_000_000_001))
        #expect(other == first)
        timestamps.forget(app: "a", channel: "c")
        #expect(timestamps.next(app: "a", channel: "c", requested: nil) == first)
    }
}
