import Foundation
import HeraldCore
import Testing

@testable import Webhooks

@Suite("webhook request")
struct WebhookRequestTests {
    private func parse(_ json: String, allowHTTP: Bool = false) throws(WebhookError) -> WebhookRequest {
        try WebhookRequest.parse(Array(json.utf8), allowHTTP: allowHTTP)
    }

    private func code(_ json: String, allowHTTP: Bool = false) -> String? {
        do {
            _ = try parse(json, allowHTTP: allowHTTP)
            return nil
        } catch {
            return error.code
        }
    }

    @Test("a valid body parses, with events sorted and deduplicated")
    func valid() throws {
        let request = try parse(
            #"{"url": "https://example.com/hook?x=1", "events": ["notification.finished", "device.invalidated", "device.invalidated"]}"#
        )
        #expect(request.url == "https://example.com/hook?x=1")
        #expect(request.events == [.deviceInvalidated, .notificationFinished])
        #expect(request.secret == nil)
        #expect(WebhookTarget(url: request.url)?.path == "/hook?x=1")
        #expect(WebhookTarget(url: request.url)?.port == 443)
    }

    @Test("an unknown event is a 400 naming the accepted ones")
    func unknownEvent() {
        do {
            _ = try parse(#"{"url": "https://example.com/", "events": ["device.created"]}"#)
            Issue.record("accepted an unknown event")
        } catch {
            #expect(error.code == "unknown_event")
            #expect(error.field == "events[0]")
            #expect(error.message.contains("device.invalidated, device.reassigned, notification.finished"))
        }
    }

    @Test("URLs: https only unless allowed, no user info, no fragment, bounded length")
    func urls() {
        let events = #""events": ["notification.finished"]"#
        #expect(code(#"{"url": "http://example.com/", \#(events)}"#) == "invalid_url")
        #expect(code(#"{"url": "http://127.0.0.1:9000/", \#(events)}"#, allowHTTP: true) == nil)
        #expect(code(#"{"url": "ftp://example.com/", \#(events)}"#, allowHTTP: true) == "invalid_url")
        #expect(code(#"{"url": "https://user:pw@example.com/", \#(events)}"#) == "invalid_url")
        #expect(code(#"{"url": "https://example.com/#x", \#(events)}"#) == "invalid_url")
        #expect(code(#"{"url": "/relative", \#(events)}"#) == "invalid_url")
        let long = "https://example.com/" + String(repeating: "a", count: 2_100)
        #expect(code(#"{"url": "\#(long)", \#(events)}"#) == "invalid_url")
    }

    @Test("secrets: 16-256 visible ASCII characters; unknown fields and bad JSON refused")
    func secretsAndStrictness() {
        let base = #""url": "https://example.com/", "events": ["notification.finished"]"#
        #expect(code(#"{\#(base), "secret": "short"}"#) == "invalid_secret")
        #expect(code(#"{\#(base), "secret": "sixteen chars ok"}"#) == "invalid_secret")
        #expect(code(#"{\#(base), "secret": "sixteen-chars-ok"}"#) == nil)
        #expect(code(#"{\#(base), "secret": "\#(String(repeating: "x", count: 257))"}"#) == "invalid_secret")
        #expect(code(#"{\#(base), "extra": 1}"#) == "unknown_field")
        #expect(code(#"{\#(base),}"#) == "invalid_json")
        #expect(code(#"{"url": "https://example.com/", "events": []}"#) == "invalid_events")
    }
}
