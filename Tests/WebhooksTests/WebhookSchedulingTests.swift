import DatabaseTestSupport
import Foundation
import HeraldCore
import Jobs
import Notifications
import Storage
import Testing

@testable import Webhooks

/// How events find a delivery job, and what `notification.finished` counts.
@Suite("webhook scheduling")
struct WebhookSchedulingTests {
    @Test(
        "an event recorded while the delivery job runs gets a follow-up job; later ones join it",
        arguments: Backend.allCases
    )
    func followUpWhileRunning(backend: Backend) async throws {
        try await WebhookHarness.with(backend) { harness, clock in
            let webhook = try await harness.createWebhook(url: "https://receiver.example/")
            try await harness.recordInvalidations(1)
            clock.advance(1)
            let running = try #require(try await harness.queue.claim(owner: "test", limit: 10, lease: 60).first)
            #expect(running.uniqueKey == "webhook.deliver:\(RequestIdentifier.lowercaseString(webhook.id))")

            // The running job may have read the outbox already: a follow-up keyed after it.
            try await harness.recordInvalidations(2)
            let followUps = try await harness.database.query(
                "SELECT unique_key FROM jobs WHERE status = 'pending'"
            ).map { try $0.string("unique_key") }
            #expect(followUps == ["\(running.uniqueKey ?? ""):after:\(RequestIdentifier.lowercaseString(running.id))"])
            // A later event joins the pending follow-up.
            try await harness.recordInvalidations(1)
            let due = try await harness.pendingDeliveryJobs()
            #expect(due.count == 1)
            #expect(due.allSatisfy { abs($0.timeIntervalSince(clock.now()) - 1) < 0.01 })
        }
    }

    @Test("a job with nothing left to send ends; one with events due later postpones itself until then")
    func jobOutcome() async throws {
        try await WebhookHarness.with(.sqliteMemory) { harness, clock in
            let webhook = try await harness.createWebhook(url: "https://receiver.example/")
            try await harness.recordInvalidations(1)
            // Not claimed yet: the row is due, but the job looks at a moment when a claim holds it.
            _ = try await harness.store.claimBatch(webhook.id, limit: 100, lease: 60, at: clock.now())
            clock.advance(1)
            let job = try #require(try await harness.queue.claim(owner: "test", limit: 10, lease: 60).first)
            let outcome = try await harness.deliverer.run(job)
            guard case .postpone(_, let until) = outcome else {
                Issue.record("expected a postponement, got \(outcome)")
                return
            }
            #expect(abs(until.timeIntervalSince(clock.now()) - 59) < 0.01)
            #expect(try await harness.store.delete(id: webhook.id))
            #expect(try await harness.deliverer.run(job) == .done)
        }
    }

    @Test("notification.finished counts tokens without a result as cancelled or failed, listing every result")
    func finalCounts() {
        let counts = DeliveryCounts(counts: [.sent: 3, .pending: 2, .retrying: 1, .dead: 1])
        let cancelled = Dictionary(uniqueKeysWithValues: WebhookEvents.finalCounts(counts, status: .cancelled))
        #expect(cancelled == ["sent": 3, "rejected": 0, "dead": 1, "failed": 0, "cancelled": 3])
        let failed = Dictionary(uniqueKeysWithValues: WebhookEvents.finalCounts(counts, status: .failed))
        #expect(failed == ["sent": 3, "rejected": 0, "dead": 1, "failed": 3, "cancelled": 0])
    }
}
