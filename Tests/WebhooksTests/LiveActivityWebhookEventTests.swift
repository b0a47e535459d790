import Foundation
import HeraldCore
import Testing

@testable import Webhooks

/// The `live_activity.*` events: a webhook subscribes to them by name, and each carries the
/// activity's id, app, environment and attributes type, and for an end or a failure the reason.
@Suite struct LiveActivityWebhookEventTests {
    @Test("a webhook subscribes to live_activity.started, .ended and .failed by name")
    func subscribes() throws {
        let body =
            #"{"url": "https://example.com/hook", "events": "#
            + #"["live_activity.ended", "live_activity.started", "live_activity.failed"]}"#
        let request = try WebhookRequest.parse(Array(body.utf8), allowHTTP: false)
        #expect(Set(request.events) == [.liveActivityStarted, .liveActivityEnded, .liveActivityFailed])
    }

    @Test("the event's JSON: id, app, environment, attributes_type, and reason when there is one")
    func json() throws {
        let id = try #require(UUID(uuidString: "6F1C2D3E-0000-4000-8000-000000000022"))
        let at = Date(timeIntervalSince1970: 1_790_000_000)
        let ended = WebhookEvent.liveActivity(
            .liveActivityEnded,
            id: id,
            app: "com.example.app",
            environment: "production",
            attributesType: "LoanAttributes",
            reason: "end_at",
            at: at
        )
        let object = try #require(JSONValue(parsing: Array(ended.json.utf8)).objectValue)
        #expect(object["type"] == "live_activity.ended")
        #expect(
            object["data"]
                == .object([
                    "id": "6f1c2d3e-0000-4000-8000-000000000022", "app": "com.example.app",
                    "environment": "production", "attributes_type": "LoanAttributes", "reason": "end_at",
                ])
        )
        let started = WebhookEvent.liveActivity(
            .liveActivityStarted,
            id: id,
            app: "com.example.app",
            environment: "sandbox",
            attributesType: "LoanAttributes",
            reason: nil,
            at: at
        )
        let data = try #require(JSONValue(parsing: Array(started.json.utf8)).objectValue?["data"]?.objectValue)
        #expect(data["reason"] == nil)
        #expect(data["environment"] == "sandbox")
    }
}
