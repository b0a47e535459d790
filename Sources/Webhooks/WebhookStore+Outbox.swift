import Foundation
import HeraldCore
import Storage

// The outbox: events written per subscribed webhook, claimed in batches by the delivery job,
// deleted once delivered, rescheduled with backoff after a failure, dead after the retry window.
extension WebhookStore {
    /// One undelivered event of a batch.
    struct OutboxEvent: Sendable, Hashable {
        var eventID: String
        var json: String
        /// Attempts including the one this batch is for.
        var attempts: Int
        var firstAttemptAt: Date
    }

    /// A claimed batch: the webhook and up to the batch size of its due events, oldest first.
    struct Batch: Sendable {
        var webhook: Webhook
        var events: [OutboxEvent]
    }

    /// The webhooks subscribed to each type, read inside the caller's transaction. On PostgreSQL
    /// the rows are locked `FOR SHARE`: a delivery claim (`FOR UPDATE`) then waits for this
    /// transaction, so a claim never misses an event whose job it found already pending.
    func subscribers(on executor: any DatabaseExecutor) async throws -> [(id: UUID, events: Set<WebhookEventType>)] {
        let lock = executor.dialect == .postgres ? " FOR SHARE" : ""
        return try await executor.query("SELECT id, events FROM webhooks ORDER BY id\(lock)").map { row in
            let events = try row.string("events").split(separator: ",")
                .compactMap { WebhookEventType(rawValue: String($0)) }
            return (try row.uuid("id"), Set(events))
        }
    }

    /// Inserts one pending row per (webhook, event), due at once (the job's due time makes the
    /// batching window).
    func insertOutbox(_ rows: [(webhook: UUID, event: WebhookEvent)], on executor: any DatabaseExecutor) async throws {
        // 6 binds a row; 200 rows stay under both drivers' parameter limits.
        for start in stride(from: 0, to: rows.count, by: 200) {
            let chunk = rows[start..<min(start + 200, rows.count)]
            var binds: [SQLValue] = []
            var values: [String] = []
            for (webhook, event) in chunk {
                let base = binds.count
                binds += [
                    SQLValue(webhook), SQLValue(event.id), .text(event.type.rawValue), .text(event.json),
                    SQLValue(event.createdAt),
                ]
                values.append(
                    "($\(base + 1), $\(base + 2), $\(base + 3), $\(base + 4), 'pending', $\(base + 5), $\(base + 5))"
                )
            }
            try await executor.execute(
                """
                INSERT INTO webhook_outbox (webhook_id, event_id, event_type, event, status, created_at, due_at)
                VALUES \(values.joined(separator: ", ")) ON CONFLICT DO NOTHING
                """,
                binds
            )
        }
    }

    /// Claims up to `limit` due events of the webhook, pushing their due time `lease` seconds on
    /// (so a second job does not take them, and a crash mid-delivery retries them) and counting
    /// the attempt. `nil` when the webhook was deleted.
    func claimBatch(_ id: UUID, limit: Int, lease: TimeInterval, at now: Date) async throws -> Batch? {
        try await database.transaction { tx -> Batch? in
            let lock = tx.dialect == .postgres ? " FOR UPDATE" : ""
            guard
                let webhook = try await tx.queryFirst(
                    "SELECT \(Self.columns) FROM webhooks WHERE id = $1\(lock)",
                    [SQLValue(id)]
                ).map(Self.webhook(from:))
            else { return nil }
            let rows = try await tx.query(
                """
                SELECT event_id, event, attempts, first_attempt_at FROM webhook_outbox
                WHERE webhook_id = $1 AND status = 'pending' AND due_at <= $2
                ORDER BY due_at, created_at, event_id LIMIT $3
                """,
                [SQLValue(id), SQLValue(now), SQLValue(limit)]
            )
            guard !rows.isEmpty else { return Batch(webhook: webhook, events: []) }
            let events = try rows.map { row in
                OutboxEvent(
                    eventID: try row.string("event_id"),
                    json: try row.string("event"),
                    attempts: Int(try row.int("attempts")) + 1,
                    firstAttemptAt: try row.optionalDate("first_attempt_at") ?? now
                )
            }
            let list = events.indices.map { "$\($0 + 4)" }.joined(separator: ", ")
            try await tx.execute(
                """
                UPDATE webhook_outbox SET due_at = $2, attempts = attempts + 1,
                    first_attempt_at = COALESCE(first_attempt_at, $3)
                WHERE webhook_id = $1 AND event_id IN (\(list))
                """,
                [SQLValue(id), SQLValue(now.addingTimeInterval(lease)), SQLValue(now)]
                    + events.map { .text($0.eventID) }
            )
            return Batch(webhook: webhook, events: events)
        }
    }

    /// The receiver took the batch: its rows go, the webhook's counters move.
    func recordDelivered(_ id: UUID, _ events: [OutboxEvent], at now: Date) async throws {
        try await database.transaction { tx in
            let list = events.indices.map { "$\($0 + 2)" }.joined(separator: ", ")
            try await tx.execute(
                "DELETE FROM webhook_outbox WHERE webhook_id = $1 AND event_id IN (\(list))",
                [SQLValue(id)] + events.map { .text($0.eventID) }
            )
            try await tx.execute(
                """
                UPDATE webhooks SET delivered_count = delivered_count + $2, last_delivery_at = $3 WHERE id = $1
                """,
                [SQLValue(id), SQLValue(events.count), SQLValue(now)]
            )
        }
    }

    /// The batch failed with `error`: events whose first attempt is `window` or more ago become
    /// dead; the others are due again at `retryAt`, but no later than the end of their window (a
    /// last attempt then). Dead events older than `deadRetention` go, so a receiver gone for good
    /// does not fill the table. Returns how many became dead.
    func recordFailed(
        _ id: UUID,
        _ events: [OutboxEvent],
        error: String,
        retryAt: Date,
        window: TimeInterval,
        deadRetention: TimeInterval,
        at now: Date
    ) async throws -> Int {
        try await database.transaction { tx in
            let list = events.indices.map { "$\($0 + 5)" }.joined(separator: ", ")
            let ids: [SQLValue] = events.map { .text($0.eventID) }
            let windowMilliseconds = Int64((window * 1_000).rounded())
            let dead = try await tx.execute(
                """
                UPDATE webhook_outbox SET status = 'dead', last_error = $2, due_at = $3
                WHERE webhook_id = $1 AND status = 'pending' AND first_attempt_at + $4 <= $3
                    AND event_id IN (\(list))
                """,
                [SQLValue(id), .text(error), SQLValue(now), .integer(windowMilliseconds)] + ids
            )
            try await tx.execute(
                """
                UPDATE webhook_outbox SET last_error = $2,
                    due_at = CASE WHEN first_attempt_at + $4 < $3 THEN first_attempt_at + $4 ELSE $3 END
                WHERE webhook_id = $1 AND status = 'pending' AND event_id IN (\(list))
                """,
                [SQLValue(id), .text(error), SQLValue(retryAt), .integer(windowMilliseconds)] + ids
            )
            try await tx.execute(
                "UPDATE webhooks SET last_error = $2, last_error_at = $3 WHERE id = $1",
                [SQLValue(id), .text(error), SQLValue(now)]
            )
            if dead > 0 {
                try await tx.execute(
                    "DELETE FROM webhook_outbox WHERE webhook_id = $1 AND status = 'dead' AND due_at < $2",
                    [SQLValue(id), SQLValue(now.addingTimeInterval(-deadRetention))]
                )
            }
            return dead
        }
    }

    /// When the webhook's next pending event is due, or `nil` when none is pending.
    func nextDue(_ id: UUID) async throws -> Date? {
        try await database.queryFirst(
            "SELECT MIN(due_at) AS next FROM webhook_outbox WHERE webhook_id = $1 AND status = 'pending'",
            [SQLValue(id)]
        )?.optionalDate("next")
    }
}
