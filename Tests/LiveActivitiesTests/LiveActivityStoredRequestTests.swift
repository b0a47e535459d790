import APNs
import Foundation
import HeraldCore
import Testing

@testable import LiveActivities

/// The stored `request` column: rows written with `JSONEncoder` (sorted keys) read back equal
/// through the one JSON grammar, and as Foundation's decoder read them before.
@Suite("LiveActivities: stored requests read with the one grammar")
struct LiveActivityStoredRequestTests {
    static let requests: [LiveActivityRequest] = [
        LiveActivityRequest(
            id: UUID(uuidString: "0F1E2D3C-4B5A-4978-8695-A4B3C2D1E0F9"),
            app: "com.example.app",
            environment: .sandbox,
            attributesType: "DeliveryAttributes",
            attributes: ["order": "A-1/2", "items": [1, 2.5, "é", nil, true], "meta": ["nested": [:]]],
            idAttribute: "order",
            contentState: ["eta": 1_800_000_000, "progress": 0.25, "note": "\"quoted\"\n"],
            alert: LiveActivityAlert(title: "On its way", body: "Arrives soon"),
            audience: .tokens(["aa", "bb"]),
            channel: .create(storagePolicy: 1),
            requestUpdateToken: false,
            staleDate: 1_800_000_600,
            relevanceScore: 1,
            startAt: 1_800_000_000,
            endAt: Int64.max
        ),
        LiveActivityRequest(
            attributesType: "T",
            attributes: [:],
            contentState: ["step": 0],
            alert: LiveActivityAlert(title: "t", body: "b"),
            audience: .all,
            channel: .existing("Y2hhbm5lbA=="),
            relevanceScore: 0.5
        ),
        LiveActivityRequest(
            attributesType: "T",
            attributes: [:],
            contentState: [:],
            alert: LiveActivityAlert(title: "t", body: "b"),
            audience: .allTags(["vip", "beta"])
        ),
    ]

    @Test("a request JSONEncoder wrote decodes equal, as Foundation's decoder reads it", arguments: requests)
    func readsWhatJSONEncoderWrote(request: LiveActivityRequest) throws {
        let text = try LiveActivityStore.json(request)
        let decoded = try LiveActivityStore.decodeJSON(LiveActivityRequest.self, text)
        #expect(decoded == request)
        #expect(decoded == (try JSONDecoder().decode(LiveActivityRequest.self, from: Data(text.utf8))))
    }

    @Test("a stored request that is not one throws a DecodingError naming the field")
    func refusesAMalformedRow() throws {
        let text = try LiveActivityStore.json(Self.requests[1]).replacingOccurrences(
            of: #""attributesType":"T""#,
            with: #""attributesType":7"#
        )
        let error = try #require(throws: DecodingError.self) {
            try LiveActivityStore.decodeJSON(LiveActivityRequest.self, text)
        }
        guard case .typeMismatch(_, let context) = error else {
            Issue.record("expected typeMismatch, got \(error)")
            return
        }
        #expect(context.codingPath.map(\.stringValue) == ["attributesType"])
    }
}
