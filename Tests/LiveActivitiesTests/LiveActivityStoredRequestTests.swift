import APNs
import Foundation
import HeraldCore
import Testing

@testable import LiveActivities

/// The stored `request` column: rows written with `JSONEncoder` (sorted keys) read back equal
/// through the one JSON grammar and ``LiveActivityRequest/init(json:)``, as Foundation's decoder
/// reads them.
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
        LiveActivityRequest(
            attributesType: "T",
            attributes: ["a": 1],
            contentState: ["s": "x"],
            alert: LiveActivityAlert(title: "", body: ""),
            audience: .anyTag(["news"]),
            relevanceScore: 2.75
        ),
        {
            var shared = LiveActivityRequest(
                environment: .production,
                attributesType: "BoardAttributes",
                attributes: [:],
                contentState: ["arrived": []],
                alert: LiveActivityAlert(title: "Meet", body: "at 8"),
                audience: .users(["u1", "u2"])
            )
            shared.start = .app
            shared.members = [
                LiveActivityMember(userID: "u1", name: "Ann"), LiveActivityMember(userID: "u2", name: "Bo"),
            ]
            shared.board = LiveActivityBoardOptions(
                arrivalAlert: LiveActivityAlert(title: "{name} is there", body: ""),
                endWhenAllArrived: 600,
                nudge: .init(after: 900, alert: LiveActivityAlert(title: "Coming?", body: "Post your ETA"))
            )
            return shared
        }(),
        {
            var bare = LiveActivityRequest(
                attributesType: "T",
                attributes: [:],
                contentState: [:],
                alert: LiveActivityAlert(title: "t", body: "b"),
                audience: .users(["u"])
            )
            bare.board = LiveActivityBoardOptions()
            bare.start = .push
            return bare
        }(),
    ]

    @Test("a request JSONEncoder wrote reads back equal, as Foundation's decoder reads it", arguments: requests)
    func readsWhatJSONEncoderWrote(request: LiveActivityRequest) throws {
        let text = try LiveActivityStore.json(request)
        let read = try LiveActivityRequest(json: try LiveActivityStore.value(text))
        #expect(read == request)
        #expect(read == (try JSONDecoder().decode(LiveActivityRequest.self, from: Data(text.utf8))))
    }

    @Test("optional members written as null read as absent, as Foundation's decoder reads them")
    func nullMembers() throws {
        let text = try LiveActivityStore.json(Self.requests[2]).replacingOccurrences(
            of: #""attributesType":"T""#,
            with: #""attributesType":"T","board":null,"channel":null,"members":null,"start":null,"startAt":null"#
        )
        let read = try LiveActivityRequest(json: try LiveActivityStore.value(text))
        #expect(read == Self.requests[2])
        #expect(read == (try JSONDecoder().decode(LiveActivityRequest.self, from: Data(text.utf8))))
    }

    @Test("a stored request that is not one throws an error naming the member")
    func refusesAMalformedRow() throws {
        for (from, to, named) in [
            (#""attributesType":"T""#, #""attributesType":7"#, "attributesType"),
            (#""all":{}"#, #""everyone":{}"#, "everyone"),
            (#""requestUpdateToken":true"#, #""requestUpdateToken":1"#, "requestUpdateToken"),
        ] {
            let text = try LiveActivityStore.json(Self.requests[1]).replacingOccurrences(of: from, with: to)
            #expect(text.contains(to))
            let error = try #require(throws: LiveActivityStoredJSONError.self) {
                try LiveActivityRequest(json: try LiveActivityStore.value(text))
            }
            #expect(error.description.contains(named), "\(error)")
        }
    }
}
