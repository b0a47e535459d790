import DatabaseTestSupport
import Foundation
import HeraldCore
import Jobs
import JobsTestSupport
import Storage
import Testing

/// The jobs an operator looks at are listed from their own index: a list of dead jobs must not
/// walk every pending job created since (100,000 scheduled notifications made it 50-70 ms).
@Suite("Job queue: failed, dead and cancelled jobs are listed from jobs_attention (SQLite, no ANALYZE)")
struct JobListPlanTests {
    @Test("listing them reads jobs_attention; listing pending jobs and claiming do not")
    func attentionIndex() async throws {
        try await withDatabase(.sqliteFile) { db, _ in
            try await Migrator.migrate(db, JobMigrations.all, logger: jobTestLogger)
            let plans = QueryPlans()
            let observed = plans.observing(db) { $0.contains("FROM jobs") }
            let clock = ManualClock()
            let queue = JobQueue(database: observed, handlers: JobHandlers(), clock: clock, metrics: MetricsRegistry())
            var cancelled: [UUID] = []
            for index in 0..<20 {
                let job = try await queue.enqueue(NewJob(kind: "k", payload: "{\"i\":\(index)}", dueAt: clock.now()))
                if index % 5 == 0 { cancelled.append(try await queue.cancel(id: job.job.id).id) }
                clock.advance(1)
            }

            func plan(_ list: () async throws -> [Job]) async throws -> ([Job], [String]) {
                plans.removeAll()
                let jobs = try await list()
                return (jobs, plans.lines)
            }
            let (listed, attention) = try await plan { try await queue.list(statuses: [.cancelled]) }
            #expect(listed.map(\.id) == cancelled.reversed(), "newest first")
            #expect(attention.contains { $0.contains("jobs_attention") }, "\(attention)")
            #expect(!attention.contains { $0.contains("TEMP B-TREE FOR ORDER BY") }, "\(attention)")
            let (none, several) = try await plan { try await queue.list(statuses: [.dead, .failed]) }
            #expect(none.isEmpty)
            #expect(several.contains { $0.contains("jobs_attention") }, "\(several)")
            let (pending, pendingPlan) = try await plan { try await queue.list(statuses: [.pending]) }
            #expect(pending.count == 16)
            #expect(!pendingPlan.contains { $0.contains("jobs_attention") }, "\(pendingPlan)")
            plans.removeAll()
            #expect(try await queue.claim(owner: "o", limit: 5, lease: 30).count == 5)
            let claim = plans.lines
            #expect(!claim.isEmpty && !claim.contains { $0.contains("jobs_attention") }, "\(claim)")
        }
    }
}
