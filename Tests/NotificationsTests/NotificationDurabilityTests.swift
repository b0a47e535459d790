import APNs
import APNsSimulator
import AsyncTestSupport
import DatabaseTestSupport
import Foundation
import HeraldCore
import Jobs
import JobsTestSupport
import Notifications
import Storage
import Testing

/// What a crash or a second sender may repeat: only pushes in flight, never a whole notification.
@Suite("Notifications: results written as they come, one sender at a time, collapse ids")
struct NotificationDurabilityTests {
    /// Counts each token's deliveries at the simulator.
    static func deliveriesPerToken(_ simulator: APNSSimulator) -> [String: Int] {
        var counts: [String: Int] = [:]
        for delivery in simulator.deliveries() where delivery.isDelivered {
            if let token = delivery.token { counts[token, default: 0] += 1 }
        }
        return counts
    }

    @Test(
        "results reach the database as APNs answers, long before a batch fills",
        arguments: [Backend.sqliteMemory, .postgres]
    )
    func writtenBeforeBatchFills(_ backend: Backend) async throws {
        let held = HeldResponses()
        try await NotificationHarness.with(backend, held: held) { harness in
            let tokens = NotificationHarness.tokens(4)
            // Like APNs, the simulator allows one stream on a connection until its first success:
            // a push answered first lets the two held pushes be in flight together, whichever
            // of the three the client sends first.
            let warmUp = try await harness.create(tokens: [tokens[3]])
            #expect(try await harness.worker.runDueJobs() == 1)
            #expect(try await harness.store.counts(id: warmUp.id)[.sent] == 1)
            // One answer comes at once; the other two are held by the simulator.
            _ = harness.simulator.addFault(APNSSimulatorFault(.delay(.seconds(3)), token: tokens[1], times: 1))
            _ = harness.simulator.addFault(APNSSimulatorFault(.delay(.seconds(4)), token: tokens[2], times: 1))
            let created = try await harness.create(tokens: Array(tokens[0..<3]))
            async let ran = harness.worker.runDueJobs()
            try await held.waitUntilHeld(3)
            try await held.waitUntilHeld(4)
            // No time passes on the manual clock: the answered push's result is written at once.
            try await eventually(timeout: .seconds(20)) { try await harness.store.counts(id: created.id)[.sent] == 1 }
            let counts = try await harness.store.counts(id: created.id)
            #expect(counts[.sent] == 1)
            #expect(counts[.pending] == 2, "the held pushes have no result yet")

            held.release(3)
            held.release(4)
            #expect(try await ran == 1)
            let done = try await harness.store.counts(id: created.id)
            #expect(done[.sent] == 3)
            #expect(try await harness.store.notification(id: created.id)?.status == .done)
        }
    }

    @Test(
        "claiming a send is a compare-and-set: a second sender is refused",
        arguments: [Backend.sqliteMemory, .postgres]
    )
    func secondSenderRefused(_ backend: Backend) async throws {
        let held = HeldResponses()
        try await NotificationHarness.with(backend, held: held) { harness in
            let tokens = NotificationHarness.tokens(5)
            _ = harness.simulator.addFault(APNSSimulatorFault(.delay(.seconds(3)), token: tokens[4], times: 1))
            let created = try await harness.create(tokens: tokens)
            let sender = harness.sender
            async let first = sender.send(created.id, isLastAttempt: false, owner: "first")
            try await held.waitUntilHeld(3)

            let second = try await sender.send(created.id, isLastAttempt: false, owner: "second")
            #expect(second.busyUntil != nil)
            #expect(second.status == .sending)
            #expect(second.recorded.isEmpty)

            held.release(3)
            #expect(try await first.status == .done)
            let perToken = Self.deliveriesPerToken(harness.simulator)
            #expect(perToken.count == 5)
            #expect(perToken.values.allSatisfy { $0 == 1 }, "a token was sent twice: \(perToken.values.sorted())")
            // Once the first sender is done, its claim is gone: nothing is left to send.
            let third = try await sender.send(created.id, isLastAttempt: false, owner: "third")
            #expect(third.busyUntil == nil)
            #expect(third.status == .done)
        }
    }

    @Test(
        "a ?wait=true send and its backup job never send at once",
        arguments: [Backend.sqliteMemory, .postgres]
    )
    func waitDoesNotRaceItsBackupJob(_ backend: Backend) async throws {
        let held = HeldResponses()
        // The backup job is due at once: it fires while the request still sends.
        try await NotificationHarness.with(backend, held: held, waitBackupDelay: 0) { harness in
            let tokens = NotificationHarness.tokens(6)
            _ = harness.simulator.addFault(APNSSimulatorFault(.delay(.seconds(3)), token: tokens[5], times: 1))
            let request = try NotificationRequest.parse(
                NotificationHarness.body(tokens: tokens),
                now: harness.clock.now()
            )
            async let waited = harness.service.createAndWait(request)
            try await held.waitUntilHeld(3)

            #expect(try await harness.worker.runDueJobs() == 1)
            let perTokenMidway = Self.deliveriesPerToken(harness.simulator)
            #expect(perTokenMidway.values.allSatisfy { $0 == 1 }, "the backup job sent while the request did")

            held.release(3)
            let result = try await waited
            #expect(result.notification.status == .done)
            #expect(result.counts[.sent] == 6)
            let perToken = Self.deliveriesPerToken(harness.simulator)
            #expect(perToken.count == 6)
            #expect(perToken.values.allSatisfy { $0 == 1 }, "a token was sent twice: \(perToken.values.sorted())")
            // The backup job's run found the request sending and was postponed (pending again), so
            // it is deleted once the request has every result: no job is left behind.
            #expect(result.notification.jobID == nil)
            #expect(try await harness.queue.list().isEmpty)
        }
    }

    @Test(
        "a ?wait=true send interrupted after its commit names the notification its backup job will send",
        arguments: [Backend.sqliteMemory, .postgres]
    )
    func interruptedWaitReportsTheNotification(_ backend: Backend) async throws {
        let held = HeldResponses()
        try await NotificationHarness.with(backend, held: held) { harness in
            let tokens = NotificationHarness.tokens(2)
            _ = harness.simulator.addFault(APNSSimulatorFault(.delay(.seconds(4)), token: tokens[1], times: 1))
            let request = try NotificationRequest.parse(
                NotificationHarness.body(tokens: tokens),
                now: harness.clock.now()
            )
            let waiting = Task { try await harness.service.createAndWait(request) }
            try await held.waitUntilHeld(4)
            waiting.cancel()
            held.release(4)
            let outcome = await waiting.result
            guard case .failure(let error) = outcome,
                let interrupted = error as? NotificationService.WaitInterrupted
            else {
                Issue.record("expected WaitInterrupted, got \(outcome)")
                return
            }
            let stored = try #require(try await harness.store.notification(id: interrupted.notification.id))
            #expect(stored.id == interrupted.notification.id)
            let job = try await harness.job(of: stored)
            #expect(job.status == .pending, "the backup job must still be there to finish the send")
        }
    }

    @Test("collapse_id absent and collapse_id null are told apart")
    func collapseIDParsing() throws {
        let now = Date()
        let absent = try NotificationRequest.parse(
            NotificationHarness.body(tokens: NotificationHarness.tokens(1)),
            now: now
        )
        #expect(absent.collapseID == nil)
        #expect(!absent.collapseIDOptedOut)
        let id = UUID()
        #expect(absent.effectiveCollapseID(notificationID: id) == RequestIdentifier.lowercaseString(id))
        let null = try NotificationRequest.parse(
            NotificationHarness.body(tokens: NotificationHarness.tokens(1), extra: ["collapse_id": NSNull()]),
            now: now
        )
        #expect(null.collapseIDOptedOut)
        #expect(null.effectiveCollapseID(notificationID: id) == nil)
    }

    @Test(
        "an alert without collapse_id carries one derived from the notification; null opts out",
        arguments: [Backend.sqliteMemory, .postgres]
    )
    func defaultCollapseID(_ backend: Backend) async throws {
        try await NotificationHarness.with(backend) { harness in
            let defaulted = try await harness.create(tokens: NotificationHarness.tokens(2))
            let optedOut = try await harness.create(
                tokens: NotificationHarness.tokens(2, offset: 2),
                extra: ["collapse_id": NSNull()]
            )
            let explicit = try await harness.create(
                tokens: NotificationHarness.tokens(2, offset: 4),
                extra: ["collapse_id": "score"]
            )
            let background = try await harness.create(
                tokens: NotificationHarness.tokens(2, offset: 6),
                extra: ["push_type": "background", "priority": 5, "payload": ["aps": ["content-available": 1]]]
            )
            #expect(try await harness.worker.runDueJobs() == 4)

            let expected = RequestIdentifier.lowercaseString(defaulted.id)
            #expect(expected.utf8.count <= 64)
            #expect(try await harness.store.notification(id: defaulted.id)?.collapseID == expected)
            #expect(try await harness.store.notification(id: optedOut.id)?.collapseID == nil)
            func collapseIDs(_ tokens: [String]) -> [String?] {
                tokens.flatMap {
                    harness.simulator.deliveries(APNSSimulatorDeliveryFilter(token: $0)).map(\.collapseID)
                }
            }
            #expect(collapseIDs(NotificationHarness.tokens(2)) == [expected, expected])
            #expect(collapseIDs(NotificationHarness.tokens(2, offset: 2)) == [nil, nil])
            #expect(collapseIDs(NotificationHarness.tokens(2, offset: 4)) == ["score", "score"])
            #expect(collapseIDs(NotificationHarness.tokens(2, offset: 6)) == [nil, nil])
            #expect(try await harness.store.notification(id: explicit.id)?.status == .done)
            #expect(try await harness.store.notification(id: background.id)?.status == .done)
        }
    }
}
