import APNs
import APNsSimulator
import DatabaseTestSupport
import Devices
import Foundation
import HeraldCore
import Jobs
import JobsTestSupport
import Notifications
import Storage
import Testing

@Suite("Notifications: store, service and fan-out over the simulator")
struct NotificationServiceTests {
    @Test("create stores the notification, its tokens and its job; GET reads it back", arguments: Backend.allCases)
    func createAndRead(_ backend: Backend) async throws {
        try await NotificationHarness.with(backend) { harness in
            let tokens = NotificationHarness.tokens(3)
            let created = try await harness.create(
                tokens: tokens,
                extra: ["send_at": Int(harness.clock.now().timeIntervalSince1970) + 600, "collapse_id": "c"]
            )
            #expect(created.status == .scheduled)
            #expect(created.tokenCount == 3)
            #expect(created.topic == NotificationHarness.topic)
            #expect(created.environment == .production)
            let details = try await harness.service.details(id: created.id, limit: 2, cursor: nil)
            #expect(details.notification.collapseID == "c")
            #expect(details.counts[.pending] == 3)
            #expect(details.results.items.map(\.token) == Array(tokens.prefix(2)))
            let next = try await harness.service.details(id: created.id, limit: 2, cursor: details.results.nextCursor)
            #expect(next.results.items.map(\.token) == [tokens[2]])
            #expect(next.results.nextCursor == nil)
            let job = try await harness.job(of: created)
            #expect(job.kind == NotificationJobKind.send)
            #expect(job.status == .pending)
            #expect(job.dueAt == created.sendAt)
        }
    }

    @Test("unknown ids are 404; cancelling a scheduled one works once, then 409", arguments: Backend.allCases)
    func cancel(_ backend: Backend) async throws {
        try await NotificationHarness.with(backend) { harness in
            do {
                _ = try await harness.service.details(id: UUID(), limit: 10, cursor: nil)
                Issue.record("found an unknown id")
            } catch let error as NotificationError {
                #expect(error.kind == .notFound)
                #expect(error.code == "not_found")
            }
            let created = try await harness.create(
                tokens: NotificationHarness.tokens(2),
                extra: ["send_at": Int(harness.clock.now().timeIntervalSince1970) + 600]
            )
            let cancelled = try await harness.service.cancel(id: created.id)
            #expect(cancelled.status == .cancelled)
            let job = try await harness.job(of: created)
            #expect(job.status == .cancelled)
            // Its tokens are cancelled with it, not left pending for ever.
            let details = try await harness.service.details(id: created.id, limit: 10, cursor: nil)
            #expect(details.counts[.cancelled] == 2)
            #expect(details.counts[.pending] == 0)
            #expect(details.results.items.map(\.status) == [.cancelled, .cancelled])
            do {
                _ = try await harness.service.cancel(id: created.id)
                Issue.record("cancelled twice")
            } catch let error as NotificationError {
                #expect(error.kind == .conflict)
                #expect(error.message.contains("cancelled"))
            }
            // Sending after the due time sends nothing.
            harness.clock.advance(601)
            _ = try await harness.worker.runDueJobs()
            #expect(harness.simulator.deliveries().isEmpty)
        }
    }

    @Test("a notification that was sent cannot be cancelled: 409", arguments: [Backend.sqliteMemory])
    func cancelAfterSend(_ backend: Backend) async throws {
        try await NotificationHarness.with(backend) { harness in
            let created = try await harness.create(tokens: NotificationHarness.tokens(2))
            #expect(try await harness.worker.runDueJobs() == 1)
            do {
                _ = try await harness.service.cancel(id: created.id)
                Issue.record("cancelled a sent notification")
            } catch let error as NotificationError {
                #expect(error.kind == .conflict)
                #expect(error.code == "not_cancellable")
                #expect(error.message.contains("done"))
            }
        }
    }

    @Test("unknown app and unserved environment are refused before anything is stored")
    func unknownApp() async throws {
        try await NotificationHarness.with(.sqliteMemory) { harness in
            do {
                _ = try await harness.create(tokens: NotificationHarness.tokens(1), extra: ["app": "com.other"])
                Issue.record("accepted an unknown app")
            } catch let error as NotificationError {
                #expect(error.kind == .invalid)
                #expect(error.code == "unknown_app")
                #expect(error.field == "app")
                #expect(error.message.contains(NotificationHarness.topic))
            }
            let rows = try await harness.database.query("SELECT COUNT(*) AS n FROM notifications")
            #expect(try rows[0].int("n") == 0)
        }
    }

    @Test(
        "fan-out over HTTP/2+TLS: results per token, dead tokens recorded with APNs' timestamp",
        arguments: Backend.allCases
    )
    func fanOut(_ backend: Backend) async throws {
        try await NotificationHarness.with(backend) { harness in
            let tokens = NotificationHarness.tokens(300)
            let unregisteredAt = Date(timeIntervalSince1970: 1_750_000_000)
            let unregistered = Set(tokens[0..<30])
            let otherApp = Set(tokens[30..<40])
            for token in unregistered {
                harness.simulator.setToken(APNSSimulatorTokenState(token: token, unregisteredAt: unregisteredAt))
            }
            for token in otherApp {
                harness.simulator.setToken(APNSSimulatorTokenState(token: token, topic: "com.example.other"))
            }
            let created = try await harness.create(tokens: tokens)
            #expect(try await harness.worker.runDueJobs() == 1)

            let details = try await harness.service.details(id: created.id, limit: 10, cursor: nil)
            #expect(details.notification.status == .done)
            #expect(details.counts[.sent] == 260)
            #expect(details.counts[.dead] == 40)
            #expect(details.counts.total == 300)

            let results = try await harness.results(created.id)
            #expect(results.count == 300)
            for result in results {
                if unregistered.contains(result.token) {
                    #expect(result.status == .dead)
                    #expect(result.reason == "Unregistered")
                    #expect(result.invalidAt == unregisteredAt)
                } else if otherApp.contains(result.token) {
                    #expect(result.status == .dead)
                    #expect(result.reason == "DeviceTokenNotForTopic")
                } else {
                    #expect(result.status == .sent)
                    #expect(result.apnsID != nil)
                    #expect(result.attempts == 1)
                }
            }
            let delivered = Set(harness.simulator.deliveries().filter(\.isDelivered).compactMap(\.token))
            let expected = Set(tokens).subtracting(unregistered).subtracting(otherApp)
            #expect(delivered.count == 260)
            #expect(delivered == expected ? true : false, "the simulator delivered other tokens than expected")

            let dead = try await harness.service.deadTokens(
                app: NotificationHarness.topic,
                environment: .production,
                since: nil,
                limit: 25,
                cursor: nil
            )
            #expect(dead.items.count == 25)
            let rest = try await harness.service.deadTokens(
                app: nil,
                environment: nil,
                since: nil,
                limit: 25,
                cursor: dead.nextCursor.flatMap(DeadTokenCursor.init)
            )
            #expect(rest.items.count == 15)
            #expect(rest.nextCursor == nil)
            let all = dead.items + rest.items
            #expect(Set(all.map(\.token)) == unregistered.union(otherApp))
            #expect(all.filter { unregistered.contains($0.token) }.allSatisfy { $0.invalidAt == unregisteredAt })
            #expect(all.allSatisfy { $0.notificationID == created.id })
            let later = try await harness.service.deadTokens(
                app: nil,
                environment: nil,
                since: harness.clock.now().addingTimeInterval(3_600),
                limit: 25,
                cursor: nil
            )
            #expect(later.items.isEmpty)
            #expect(harness.metrics.value("herald_notification_tokens_total", labels: [("result", "sent")]) == 260)
            #expect(harness.metrics.value("herald_notification_tokens_total", labels: [("result", "dead")]) == 40)
            #expect(harness.metrics.value("herald_notifications_accepted_total", labels: [("mode", "immediate")]) == 1)
        }
    }

    @Test("10,000 tokens fan out and all 10,000 results are stored", arguments: Backend.allCases)
    func tenThousand(_ backend: Backend) async throws {
        try await NotificationHarness.with(backend) { harness in
            let tokens = NotificationHarness.tokens(10_000)
            let start = ContinuousClock.now
            let created = try await harness.create(tokens: tokens)
            let stored = ContinuousClock.now
            #expect(try await harness.worker.runDueJobs() == 1)
            let sent = ContinuousClock.now
            let details = try await harness.service.details(id: created.id, limit: 1, cursor: nil)
            #expect(details.notification.status == .done)
            #expect(details.counts[.sent] == 10_000)
            #expect(details.counts.total == 10_000)
            #expect(harness.simulator.deliveries().filter(\.isDelivered).count == 10_000)
            print(
                "10,000-token fan-out on \(backend): stored in \(stored - start), sent and recorded in \(sent - stored)"
            )
        }
    }

    @Test("a scheduled notification is sent when it is due, not before", arguments: Backend.allCases)
    func scheduled(_ backend: Backend) async throws {
        try await NotificationHarness.with(backend) { harness in
            let sendAt = harness.clock.now().addingTimeInterval(3_600)
            let created = try await harness.create(
                tokens: NotificationHarness.tokens(5),
                extra: ["send_at": RFC3339.string(from: sendAt)]
            )
            #expect(try await harness.worker.runDueJobs() == 0)
            #expect(try await harness.store.notification(id: created.id)?.status == .scheduled)
            #expect(harness.simulator.deliveries().isEmpty)
            harness.clock.advance(3_601)
            #expect(try await harness.worker.runDueJobs() == 1)
            let details = try await harness.service.details(id: created.id, limit: 10, cursor: nil)
            #expect(details.notification.status == .done)
            #expect(details.counts[.sent] == 5)
            #expect(harness.simulator.deliveries().count == 5)
        }
    }

    @Test(
        "when every attempt throws, the notification is marked failed, and a retried job sends it",
        arguments: Backend.allCases
    )
    func gaveUp(_ backend: Backend) async throws {
        try await NotificationHarness.with(backend) { harness in
            let created = try await harness.create(tokens: NotificationHarness.tokens(3))
            // The sender cannot read the tokens: each of the 3 attempts throws.
            try await harness.database.execute("ALTER TABLE notification_deliveries RENAME TO deliveries_hidden")
            for _ in 0..<3 {
                #expect(try await harness.worker.runDueJobs() == 1)
                harness.clock.advance(61)
            }
            try await harness.database.execute("ALTER TABLE deliveries_hidden RENAME TO notification_deliveries")
            let job = try await harness.job(of: created)
            #expect(job.status == .dead)
            let failed = try #require(try await harness.store.notification(id: created.id))
            #expect(failed.status == .failed)
            #expect(failed.failureReason?.hasPrefix("gave up after 3 attempts") == true)

            _ = try await harness.queue.retry(id: job.id)
            #expect(try await harness.worker.runDueJobs() == 1)
            #expect(try await harness.store.notification(id: created.id)?.status == .done)
            #expect(harness.simulator.deliveries().count == 3)
        }
    }

    @Test("a send resumed after a partial run sends only the tokens without a result", arguments: Backend.allCases)
    func resume(_ backend: Backend) async throws {
        try await NotificationHarness.with(backend) { harness in
            let tokens = NotificationHarness.tokens(200)
            let created = try await harness.create(tokens: tokens)
            // What a crash after the first batches leaves: 120 results recorded, the job running.
            let now = harness.clock.now()
            try await harness.database.execute(
                """
                UPDATE notification_deliveries SET status = 'sent', apns_id = 'earlier', attempts = 1
                WHERE notification_id = $1 AND ordinal < 120
                """,
                [SQLValue(created.id)]
            )
            // The counts on the notification's row moved with those results, in their transactions.
            try await harness.database.execute(
                """
                UPDATE notifications SET status = 'sending', updated_at = $2, pending_count = pending_count - 120,
                    sent_count = sent_count + 120
                WHERE id = $1
                """,
                [SQLValue(created.id), SQLValue(now)]
            )
            #expect(try await harness.worker.runDueJobs() == 1)
            let delivered = harness.simulator.deliveries().compactMap(\.token)
            #expect(delivered.count == 80)
            #expect(Set(delivered) == Set(tokens[120...]))
            let details = try await harness.service.details(id: created.id, limit: 1, cursor: nil)
            #expect(details.counts[.sent] == 200)
            #expect(details.notification.status == .done)
            let first = try await harness.results(created.id)[0]
            #expect(first.apnsID == "earlier")
        }
    }

    @Test("retryable failures are retried by the job and marked as such meanwhile", arguments: [Backend.sqliteFile])
    func retryable(_ backend: Backend) async throws {
        try await NotificationHarness.with(backend, retryPolicy: .never) { harness in
            let tokens = NotificationHarness.tokens(4)
            _ = harness.simulator.addFault(
                APNSSimulatorFault(.respond(status: 500, reason: .internalServerError), token: tokens[0], times: 1)
            )
            let created = try await harness.create(tokens: tokens)
            #expect(try await harness.worker.runDueJobs() == 1)
            var details = try await harness.service.details(id: created.id, limit: 10, cursor: nil)
            #expect(details.notification.status == .sending)
            #expect(details.counts[.sent] == 3)
            #expect(details.counts[.retrying] == 1)
            let retrying = try #require(details.results.items.first { $0.status == .retrying })
            #expect(retrying.reason == "InternalServerError")
            let job = try await harness.job(of: created)
            #expect(job.status == .pending)

            harness.clock.advance(61)
            #expect(try await harness.worker.runDueJobs() == 1)
            details = try await harness.service.details(id: created.id, limit: 10, cursor: nil)
            #expect(details.notification.status == .done)
            #expect(details.counts[.sent] == 4)
            #expect(details.results.items.first { $0.token == tokens[0] }?.attempts == 2)
            #expect(harness.simulator.deliveries(APNSSimulatorDeliveryFilter(token: tokens[1])).count == 1)
        }
    }

    @Test("wait mode sends at once and returns every result", arguments: [Backend.sqliteMemory, .postgres])
    func wait(_ backend: Backend) async throws {
        try await NotificationHarness.with(backend) { harness in
            let tokens = NotificationHarness.tokens(20)
            harness.simulator.setToken(APNSSimulatorTokenState(token: tokens[3], unregisteredAt: Date()))
            let request = try NotificationRequest.parse(
                NotificationHarness.body(tokens: tokens),
                now: harness.clock.now()
            )
            let result = try await harness.service.createAndWait(request)
            #expect(result.notification.status == .done)
            #expect(result.results.count == 20)
            #expect(result.counts[.sent] == 19)
            #expect(result.results[3].status == .dead)
            // The backup job is deleted once every result is in: no job of any status is left.
            #expect(result.notification.jobID == nil)
            #expect(try await harness.store.notification(id: result.notification.id)?.jobID == nil)
            #expect(try await harness.queue.list().isEmpty)
            #expect(try await harness.queue.summary().counts.values.reduce(0, +) == 0)
            #expect(try await harness.worker.runDueJobs() == 0)
        }
    }
}
