import Devices
import Foundation
import HTTPRouting
import HeraldAPI
import HeraldCore
import HeraldFeature
import LiveActivities
import Notifications
import Testing
import Wake
import Webhooks

/// Notifications' errors carry a kind, not an HTTP status: HeraldAPI picks the status and writes
/// the API's error body, the same bytes for each as when the errors carried their status.
@Suite("notification errors as HTTP responses")
struct NotificationErrorResponseTests {
    @Test("each kind answers its status with the error body")
    func kinds() {
        let cases: [(NotificationError, Int, String)] = [
            (
                NotificationError(.invalid, code: "invalid_json", message: "fix the JSON", field: "tokens[0]"),
                400, #"{"error":{"code":"invalid_json","message":"fix the JSON","field":"tokens[0]"}}"#
            ),
            (
                NotificationError(.tooLarge, code: "body_too_large", message: "send less"),
                413, #"{"error":{"code":"body_too_large","message":"send less"}}"#
            ),
            (
                NotificationError(.notFound, code: "not_found", message: "no such id", field: "id"),
                404, #"{"error":{"code":"not_found","message":"no such id","field":"id"}}"#
            ),
            (
                NotificationError(.conflict, code: "not_cancellable", message: "it is sending", field: "id"),
                409, #"{"error":{"code":"not_cancellable","message":"it is sending","field":"id"}}"#
            ),
            (
                NotificationError(.unavailable, code: "apns_not_configured", message: "set APNS_AUTH_KEY"),
                503, #"{"error":{"code":"apns_not_configured","message":"set APNS_AUTH_KEY"}}"#
            ),
        ]
        for (error, status, body) in cases {
            let response = error.response
            #expect(error.httpStatus == status, "\(error)")
            #expect(response.status == status, "\(error)")
            #expect(String(decoding: response.body, as: UTF8.self) == body)
            #expect(response.headers["Content-Type"] == "application/json")
        }
    }

    @Test("every kind answers one status whatever the domain; a domain's refusals are its own type")
    func everyDomain() {
        let statuses: [(RefusalKind, Int)] = [
            (.invalid, 400), (.tooLarge, 413), (.notFound, 404), (.conflict, 409), (.unprocessable, 422),
            (.forbidden, 403), (.unavailable, 503), (.limitReached, 409), (.notConfigured, 422),
        ]
        for (kind, status) in statuses {
            #expect(DeviceError(kind, code: "c", message: "m").response.status == status, "\(kind)")
            #expect(LiveActivityError(kind, code: "c", message: "m").response.status == status, "\(kind)")
            #expect(NotificationError(kind, code: "c", message: "m").response.status == status, "\(kind)")
            #expect(WakeError(kind, code: "c", message: "m").response.status == status, "\(kind)")
            #expect(WebhookError(kind, code: "c", message: "m").response.status == status, "\(kind)")
        }
        let thrown: any Error = WakeError.invalid("invalid_every", "every must be a duration", field: "every")
        #expect(!(thrown is WebhookError))
        #expect((thrown as? WakeError)?.field == "every")
        #expect("\(thrown)" == "invalid invalid_every: every must be a duration [every]")
    }

    @Test("a parse error keeps its kind on the way to the response: 413 for a body over the limit, 400 for bad JSON")
    func parseErrors() {
        let oversized = [UInt8](repeating: UInt8(ascii: " "), count: NotificationLimits.maximumBodyBytes + 1)
        let cases: [([UInt8], Int, String)] = [
            (oversized, 413, "body_too_large"),
            (Array("{".utf8), 400, "invalid_json"),
        ]
        for (body, status, code) in cases {
            do {
                _ = try NotificationRequest.parse(body, now: Date())
                Issue.record("accepted a body that must be refused with \(code)")
            } catch {
                #expect(error.code == code)
                #expect(error.response.status == status)
            }
        }
    }
}
