import APNs
import DatabaseTestSupport
import Foundation
import HeraldCore
import HeraldFeature
import Jobs
import Storage
import Testing

@testable import HeraldAPI
@testable import Polls
@testable import Webhooks

/// The `poll.finalized` webhook event: subscribed to by name, carrying the result with the names
/// per option.
@Suite("Polls: the poll.finalized webhook event")
struct PollWebhookEventTests {
    @Test("a webhook subscribes to poll.finalized by name")
    func subscribes() throws {
        let body = #"{"url": "https://example.com/hook", "events": ["poll.finalized"]}"#
        let request = try WebhookRequest.parse(Array(body.utf8), allowHTTP: false)
        #expect(request.events == [.pollFinalized])
    }

    @Test("the event's JSON: the poll, why it is final, and each option's count and names")
    func json() throws {
        let id = try #require(UUID(uuidString: "6F1C2D3E-0000-4000-8000-000000000035"))
        let event = PollEvent(
            id: id,
            app: "com.example.app",
            environment: .sandbox,
            reason: .allVoted,
            result: PollTally(
                question: "Dinner at 8?",
                options: [
                    PollTally.Option(option: "accept", count: 2, names: ["Ann", "Bob"]),
                    PollTally.Option(option: "decline", count: 0, names: []),
                ],
                voted: 2,
                total: 2,
                final: true
            ),
            at: Date(timeIntervalSince1970: 1_790_000_000)
        )
        let webhook = WebhookPollEvents.webhookEvent(event)
        let object = try #require(JSONValue(parsing: Array(webhook.json.utf8)).objectValue)
        #expect(object["type"] == "poll.finalized")
        #expect(
            object["data"]
                == .object([
                    "id": "6f1c2d3e-0000-4000-8000-000000000035", "app": "com.example.app", "environment": "sandbox",
                    "question": "Dinner at 8?", "reason": "all_voted", "voted": 2, "total": 2,
                    "result": [
                        ["option": "accept", "count": 2, "names": ["Ann", "Bob"]],
                        ["option": "decline", "count": 0, "names": []],
                    ],
                ])
        )
    }
}

/// `herald serve`'s feature list takes Polls: its migrations, job kinds and routes collide with
/// no other feature's.
@Suite("Polls: in the feature list")
struct PollFeatureTests {
    @Test("the assembly validates with Polls in it, its migrations of its own module")
    func assembly() throws {
        #expect(HeraldFeatures.all.contains { $0.name == "Polls" })
        try HeraldFeatures.assembly.validate()
        #expect(Polls.feature.migrations.allSatisfy { $0.module == "Polls" })
        #expect(Set(Polls.feature.jobKinds) == [PollJobKind.close, PollJobKind.end, PollJobKind.prune])
    }

    @Test("its jobs handle the kinds it declares, with the Live Activities retention read", arguments: ["7", "zero"])
    func jobs(days: String) async throws {
        try await withDatabase(.sqliteMemory) { db, _ in
            var context = FeatureContext(
                environment: ["HERALD_LIVE_ACTIVITY_RETENTION_DAYS": days],
                logger: Logger(label: "test", level: .error)
            )
            context.provide(db as any Database)
            if days == "zero" {
                #expect(throws: (any Error).self, "a retention that is not a number stops start-up") {
                    try Polls.feature.jobs(context)
                }
            } else {
                let jobs = try Polls.feature.jobs(context)
                #expect(Set(jobs.handlers.kinds) == Set(Polls.feature.jobKinds))
            }
        }
    }
}
