import APNs
import APNsTestSupport
import AsyncTestSupport
import DatabaseTestSupport
import Devices
import Foundation
import HeraldCore
import Jobs
import JobsTestSupport
import Notifications
import Storage
import Synchronization
import Testing

/// The notification send against the in-memory APNs: no socket, no real clock. The client's retry
/// waits end when the test moves the manual clock; every request is recorded as the client wrote it.
@Suite("Notifications: sends against the in-memory APNs")
struct NotificationSendInMemoryTests {
    @Test(
        "mixed outcomes: sent, dead with APNs' timestamp or the clock's time, rejected, retrying",
        arguments: Backend.allCases
    )
    func mixedOutcomes(_ backend: Backend) async throws {
        try await NotificationHarness.inMemory(backend, retryPolicy: .never) { harness in
            let tokens = NotificationHarness.tokens(8)
            let unregisteredAt = Date(timeIntervalSince1970: 1_750_000_000)
            harness.apns.always(tokens[0], .unregistered(at: unregisteredAt))
            harness.apns.always(tokens[1], .badDeviceToken)
            harness.apns.always(tokens[2], .payloadTooLarge)
            harness.apns.script(tokens[3], .internalServerError)
            harness.apns.script(tokens[4], .transportError(InMemoryAPNs.ConnectionLost()))
            let created = try await harness.create(tokens: tokens)
            #expect(try await harness.worker.runDueJobs() == 1)

            let results = Dictionary(uniqueKeysWithValues: try await harness.results(created.id).map { ($0.token, $0) })
            #expect(results[tokens[0]]?.status == .dead)
            #expect(results[tokens[0]]?.reason == "Unregistered")
            #expect(results[tokens[0]]?.invalidAt == unregisteredAt)
            #expect(results[tokens[1]]?.status == .dead)
            #expect(results[tokens[1]]?.reason == "BadDeviceToken")
            #expect(results[tokens[1]]?.invalidAt == harness.clock.now(), "no timestamp: the clock's time")
            #expect(results[tokens[2]]?.status == .rejected)
            #expect(results[tokens[2]]?.reason == "PayloadTooLarge")
            #expect(results[tokens[3]]?.status == .retrying)
            #expect(results[tokens[3]]?.reason == "InternalServerError")
            #expect(results[tokens[4]]?.status == .retrying)
            for token in tokens[5...] {
                let result = try #require(results[token])
                #expect(result.status == .sent)
                #expect(result.attempts == 1)
                #expect(result.apnsID == harness.apns.requests(to: token).first?.apnsID)
            }
            // One request per token, each recorded with its answer.
            #expect(harness.apns.requests.count == 8)
            #expect(Set(harness.apns.requests.compactMap(\.deviceToken)) == Set(tokens))
            #expect(harness.apns.requests(to: tokens[0]).map(\.status) == [410])
            #expect(harness.apns.requests(to: tokens[4]).map(\.status) == [nil])

            let details = try await harness.service.details(id: created.id, limit: 10, cursor: nil)
            #expect(details.notification.status == .sending)
            #expect(details.counts[.sent] == 3)
            #expect(details.counts[.dead] == 2)
            #expect(details.counts[.rejected] == 1)
            #expect(details.counts[.retrying] == 2)
            #expect(harness.metrics.value("herald_notification_tokens_total", labels: [("result", "dead")]) == 2)

            let dead = try await harness.service.deadTokens(
                app: NotificationHarness.topic,
                environment: .production,
                since: nil,
                limit: 10,
                cursor: nil
            )
            #expect(Set(dead.items.map(\.token)) == [tokens[0], tokens[1]])
            #expect(dead.items.allSatisfy { $0.notificationID == created.id })
            #expect(dead.items.first { $0.token == tokens[0] }?.invalidAt == unregisteredAt)

            // The job's next attempt, a minute later on the manual clock, sends only the two retrying.
            harness.clock.advance(61)
            #expect(try await harness.worker.runDueJobs() == 1)
            #expect(harness.apns.requests.count == 10)
            #expect(harness.apns.requests.suffix(2).compactMap(\.deviceToken).sorted() == [tokens[3], tokens[4]])
            let done = try await harness.service.details(id: created.id, limit: 10, cursor: nil)
            #expect(done.notification.status == .done)
            #expect(done.counts[.sent] == 5)
            #expect(done.counts[.retrying] == 0)
        }
    }

    @Test(
        "the client retries 429 and 503 after APNs' retry-after on the manual clock, then the push is sent",
        arguments: Backend.allCases
    )
    func clientRetries(_ backend: Backend) async throws {
        let clock = ManualClock()
        try await NotificationHarness.inMemory(backend, clock: clock) { harness in
            let tokens = NotificationHarness.tokens(3)
            harness.apns.script(
                tokens[1],
                .tooManyRequests(retryAfter: 2),
                .serviceUnavailable(retryAfter: 5),
                .success
            )
            let created = try await harness.create(tokens: tokens)
            let start = clock.now()
            async let ran = harness.worker.runDueJobs()
            // The claim renewal sleeps on the clock too: wait for the retry's own sleep.
            try await clock.waitForSleep(within: 20) { $0 == start.addingTimeInterval(2) }
            clock.advance(2)
            try await clock.waitForSleep(within: 20) { $0 == start.addingTimeInterval(7) }
            clock.advance(5)
            #expect(try await ran == 1)

            let attempts = harness.apns.requests(to: tokens[1])
            #expect(attempts.map(\.status) == [429, 503, 200])
            #expect(attempts.map(\.receivedAt) == [start, start.addingTimeInterval(2), start.addingTimeInterval(7)])
            #expect(Set(attempts.compactMap(\.apnsID)).count == 1, "every attempt is the same push")
            let result = try #require(try await harness.results(created.id).first { $0.token == tokens[1] })
            #expect(result.status == .sent)
            #expect(result.attempts == 3)
            #expect(harness.apns.requests(to: tokens[0]).count == 1)
            #expect(try await harness.store.notification(id: created.id)?.status == .done)
        }
    }

    @Test(
        "a push refused by every attempt is retrying after the client's last, then sent by the job's next run",
        arguments: Backend.allCases
    )
    func clientGivesUp(_ backend: Backend) async throws {
        let clock = ManualClock()
        try await NotificationHarness.inMemory(backend, clock: clock) { harness in
            let token = NotificationHarness.tokens(1)[0]
            harness.apns.script(
                token,
                .serviceUnavailable(retryAfter: 1),
                .serviceUnavailable(retryAfter: 1),
                .serviceUnavailable(retryAfter: 1)
            )
            let created = try await harness.create(tokens: [token])
            let start = clock.now()
            async let ran = harness.worker.runDueJobs()
            try await clock.waitForSleep(within: 20) { $0 == start.addingTimeInterval(1) }
            clock.advance(1)
            try await clock.waitForSleep(within: 20) { $0 == start.addingTimeInterval(2) }
            clock.advance(1)
            #expect(try await ran == 1)
            var result = try #require(try await harness.results(created.id).first)
            #expect(result.status == .retrying)
            #expect(result.reason == "ServiceUnavailable")
            #expect(result.attempts == 3)
            #expect(harness.apns.requests(to: token).map(\.status) == [503, 503, 503])

            clock.advance(61)
            #expect(try await harness.worker.runDueJobs() == 1)
            result = try #require(try await harness.results(created.id).first)
            #expect(result.status == .sent)
            #expect(harness.apns.requests(to: token).map(\.status) == [503, 503, 503, 200])
        }
    }

    @Test("headers as recorded: push type, topic, priority, expiration, collapse id, a bearer token")
    func headers() async throws {
        try await NotificationHarness.inMemory(.sqliteMemory) { harness in
            let tokens = NotificationHarness.tokens(2)
            let expiration = Int(harness.clock.now().timeIntervalSince1970) + 3_600
            let created = try await harness.create(
                tokens: tokens,
                extra: ["priority": 5, "expiration": expiration, "collapse_id": "score"]
            )
            #expect(try await harness.worker.runDueJobs() == 1)
            let requests = harness.apns.requests
            #expect(requests.count == 2)
            for request in requests {
                #expect(request.method == "POST")
                #expect(request.pushType == "alert")
                #expect(request.topic == NotificationHarness.topic)
                #expect(request.priority == "5")
                #expect(request.expiration == "\(expiration)")
                #expect(request.collapseID == "score")
                #expect(request.header("authorization")?.hasPrefix("bearer ") == true)
                #expect(request.payload?["aps"]?["alert"] == "Hello")
                #expect(request.endpoint == APNSEndpoints().push(.production))
            }
            #expect(Set(requests.compactMap(\.apnsID)).count == 2, "one apns-id per push")

            let background = try await harness.create(
                tokens: [tokens[0]],
                extra: [
                    "push_type": "background", "payload": ["aps": ["content-available": 1]], "collapse_id": NSNull(),
                ]
            )
            #expect(try await harness.worker.runDueJobs() == 1)
            let last = try #require(harness.apns.requests.last)
            #expect(last.pushType == "background")
            #expect(last.priority == "5")
            #expect(last.collapseID == nil)
            #expect(try await harness.store.notification(id: background.id)?.status == .done)
            #expect(try await harness.store.notification(id: created.id)?.status == .done)
        }
    }
    /// The statement with which a transaction renews a sender's claim: in a transaction, only the
    /// write of a batch of results runs it.
    static let renewal = "UPDATE notifications SET send_lease_expires_at"

    /// A sender like the harness's whose store reaches the database through `observe`.
    static func sender(
        _ harness: NotificationHarness,
        maximumInFlight: Int,
        observe: @escaping @Sendable (String, any DatabaseExecutor) async throws -> Void
    ) -> NotificationSender {
        let database = ObservedDatabase(base: harness.database) { sql, _, tx in try await observe(sql, tx) }
        return NotificationSender(
            store: NotificationStore(database: database, devices: DeviceStore(database: database)),
            clients: harness.sender.clients,
            clock: harness.clock,
            maximumInFlight: maximumInFlight,
            metrics: MetricsRegistry(),
            logger: quietLogger
        )
    }

    @Test(
        "the results of pushes answered together share a transaction, and a push keeps its slot until written",
        arguments: Backend.allCases
    )
    func resultsShareTransactions(_ backend: Backend) async throws {
        try await NotificationHarness.inMemory(backend) { harness in
            let tokens = NotificationHarness.tokens(120)
            let maximumInFlight = 40
            let writes = Mutex(0)
            let firstWrite = Latch()
            // The first write waits until the test lets it go: the pushes answered meanwhile wait
            // for the next one.
            let sender = Self.sender(harness, maximumInFlight: maximumInFlight) { sql, _ in
                guard sql.hasPrefix(Self.renewal) else { return }
                let isFirst = writes.withLock { writes in
                    writes += 1
                    return writes == 1
                }
                if isFirst { try await firstWrite.wait() }
            }
            let created = try await harness.create(tokens: tokens)
            async let sent = sender.send(created.id, isLastAttempt: false, owner: "batching")
            try await eventually("every slot's push answered", timeout: .seconds(60)) {
                harness.apns.requests.count >= maximumInFlight
            }
            #expect(
                harness.apns.requests.count == maximumInFlight,
                "no push is sent while the pushes in flight wait for their results' write"
            )
            firstWrite.open()
            let summary = try await sent

            #expect(summary.status == .done)
            #expect(summary.recorded == [.sent: tokens.count])
            #expect(harness.apns.requests.count == tokens.count)
            let counts = try await harness.store.counts(id: created.id)
            #expect(counts[.sent] == tokens.count)
            #expect(counts[.pending] == 0)
            let transactions = writes.withLock { $0 }
            #expect(transactions >= 2)
            #expect(transactions < tokens.count, "\(transactions) transactions for \(tokens.count) results")
        }
    }

    @Test("a write that finds the claim lost ends the pass with ClaimLost", arguments: Backend.allCases)
    func claimLostEndsThePass(_ backend: Backend) async throws {
        try await NotificationHarness.inMemory(backend) { harness in
            let tokens = NotificationHarness.tokens(50)
            let maximumInFlight = 10
            let created = try await harness.create(tokens: tokens)
            // Another sender takes the notification over in the transaction of the first write,
            // just before it renews this sender's claim.
            let sender = Self.sender(harness, maximumInFlight: maximumInFlight) { sql, tx in
                guard sql.hasPrefix(Self.renewal) else { return }
                try await tx.execute(
                    "UPDATE notifications SET send_owner = 'another sender' WHERE id = $1",
                    [SQLValue(created.id)]
                )
            }
            await #expect(throws: NotificationSender.ClaimLost.self) {
                try await sender.send(created.id, isLastAttempt: false, owner: "first")
            }
            // The first write may start before every slot was used: at most the slots' pushes.
            #expect(
                (1...maximumInFlight).contains(harness.apns.requests.count),
                "nothing is sent after the pushes in flight when the claim was lost"
            )
            let owner = try await harness.database.queryFirst(
                "SELECT send_owner FROM notifications WHERE id = $1",
                [SQLValue(created.id)]
            )
            #expect(try owner?.optionalString("send_owner") == "another sender", "the new owner's claim stays")
            #expect(try await harness.store.notification(id: created.id)?.status == .sending)
        }
    }

    @Test(
        "the claim is renewed every third of the send lease while APNs is slow to answer",
        arguments: Backend.allCases
    )
    func claimRenewedWhileNothingIsWritten(_ backend: Backend) async throws {
        let clock = ManualClock()
        try await NotificationHarness.inMemory(backend, clock: clock) { harness in
            let token = NotificationHarness.tokens(1)[0]
            // The only push waits 8 s on the clock for the client's retry: nothing is written.
            harness.apns.script(token, .tooManyRequests(retryAfter: 8), .success)
            let created = try await harness.create(tokens: [token])
            let start = clock.now()
            func claimedUntil() async throws -> Date? {
                try await harness.database.queryFirst(
                    "SELECT send_lease_expires_at FROM notifications WHERE id = $1",
                    [SQLValue(created.id)]
                )?.optionalDate("send_lease_expires_at")
            }
            async let sent = harness.sender.send(created.id, isLastAttempt: false, owner: "slow")
            let lease = harness.sender.sendLease
            try await clock.waitForSleep(within: 20) { $0 == start.addingTimeInterval(8) }
            try await clock.waitForSleep(within: 20) { $0 == start.addingTimeInterval(lease / 3) }
            #expect(try await claimedUntil() == start.addingTimeInterval(lease))

            clock.advance(lease / 2)
            let renewed = start.addingTimeInterval(lease / 2 + lease)
            try await eventually("the claim renewed") { try await claimedUntil() == renewed }
            clock.advance(8 - lease / 2)
            let summary = try await sent
            #expect(summary.status == .done)
            #expect(summary.recorded == [.sent: 1])
            #expect(try await claimedUntil() == nil, "a finished pass holds no claim")
        }
    }
}
