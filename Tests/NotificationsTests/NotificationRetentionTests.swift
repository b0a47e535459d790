import DatabaseTestSupport
import Foundation
import Jobs
import JobsTestSupport
import Notifications
import Testing

@Suite("Notification retention")
struct NotificationRetentionTests {
    @Test(
        "finished notifications and their results go after the retention; pending ones stay",
        arguments: Backend.allCases
    )
    func prunesFinished(_ backend: Backend) async throws {
        try await NotificationHarness.with(backend) { harness in
            let retention = NotificationRetention(store: harness.store, retention: 3_600)
            let sent = try await harness.create(tokens: NotificationHarness.tokens(3))
            #expect(try await harness.worker.runDueJobs() == 1)
            let later = try await harness.create(
                tokens: NotificationHarness.tokens(2, offset: 10),
                extra: ["send_at": Int(harness.clock.now().timeIntervalSince1970) + 86_400]
            )
            try await retention.prune(now: harness.clock.now().addingTimeInterval(3_599))
            #expect(try await harness.store.notification(id: sent.id) != nil)

            try await retention.prune(now: harness.clock.now().addingTimeInterval(3_601))
            #expect(try await harness.store.notification(id: sent.id) == nil)
            #expect(try await harness.results(sent.id).isEmpty)
            #expect(try await harness.store.notification(id: later.id)?.status == .scheduled)
            #expect(try await harness.results(later.id).count == 2)
        }
    }

    @Test("the hourly pruning job is scheduled once however often instances start", arguments: [Backend.sqliteMemory])
    func scheduledOnce(_ backend: Backend) async throws {
        try await NotificationHarness.with(backend) { harness in
            let retention = NotificationRetention(store: harness.store, retention: 3_600)
            try await retention.schedule(on: harness.queue)
            try await retention.schedule(on: harness.queue)
            let jobs = try await harness.queue.list(kind: NotificationRetention.jobKind)
            #expect(jobs.count == 1)
            #expect(jobs.first?.schedule == .interval(seconds: 3_600))
        }
    }
}
