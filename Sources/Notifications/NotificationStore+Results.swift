import Foundation
import HeraldCore
import Storage

extension NotificationStore {
    /// What a result upsert sets on a row that exists: the result, with the attempts added up.
    private static let onConflict = """
         ON CONFLICT (notification_id, token) DO UPDATE SET status = excluded.status,
            reason = excluded.reason, apns_id = excluded.apns_id, invalid_at = excluded.invalid_at,
            attempts = notification_deliveries.attempts + excluded.attempts,
            updated_at = excluded.updated_at
        """

    /// Writes `results` as rows of `notification_deliveries`, inserting or updating on
    /// (notification, token), inside the caller's transaction; returns the statuses the updated
    /// rows had before (a token that had no row has no entry), for the counts.
    ///
    /// On PostgreSQL each column goes as one array parameter, unnested into rows by the server:
    /// one statement of nine parameters, whatever the number of rows, instead of nine parameters a
    /// row for the server to parse and bind. SQLite, in the same process, takes multi-row
    /// `VALUES` of ``rowsPerStatement(_:on:)`` rows, each after reading the statuses it replaces. On PostgreSQL
    /// the statement returns them itself.
    static func upsert(
        _ results: [DeliveryResult],
        of id: UUID,
        on executor: any DatabaseExecutor
    ) async throws -> [String: DeliveryStatus] {
        guard !results.isEmpty else { return [:] }
        let columns = "notification_id, token, ordinal, status, reason, apns_id, invalid_at, attempts, updated_at"
        var before: [String: DeliveryStatus] = [:]
        if executor.dialect == .postgres {
            // Each row's previous status by a lookup of its own key in RETURNING: it sees the rows
            // as they were before the statement, and always goes by the primary key (a lookup of
            // the batch's tokens as a set was planned as a scan of the send's rows once analyzed).
            let rows = try await executor.query(
                """
                INSERT INTO notification_deliveries (\(columns))
                SELECT $1, * FROM unnest($2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[],
                    $7::bigint[], $8::bigint[], $9::bigint[])
                """ + onConflict + """

                    RETURNING token, (SELECT p.status FROM notification_deliveries p
                        WHERE p.notification_id = $1 AND p.token = notification_deliveries.token) AS previous
                    """,
                [
                    SQLValue(id),
                    .text(PostgresArrayLiteral.text(results.lazy.map(\.token))),
                    .text(PostgresArrayLiteral.integers(results.lazy.map { Int64($0.ordinal) })),
                    .text(PostgresArrayLiteral.text(results.lazy.map(\.status.rawValue))),
                    .text(PostgresArrayLiteral.text(results.lazy.map(\.reason))),
                    .text(PostgresArrayLiteral.text(results.lazy.map(\.apnsID))),
                    .text(
                        PostgresArrayLiteral.integers(
                            results.lazy.map { $0.invalidAt.map { EpochTime.milliseconds($0) } }
                        )
                    ),
                    .text(PostgresArrayLiteral.integers(results.lazy.map { Int64($0.attempts) })),
                    .text(PostgresArrayLiteral.integers(results.lazy.map { EpochTime.milliseconds($0.updatedAt) })),
                ]
            )
            for row in rows {
                guard let previous = try row.optionalString("previous") else { continue }
                before[try row.string("token")] = DeliveryStatus(rawValue: previous) ?? .pending
            }
            return before
        }
        var start = 0
        while start < results.count {
            let end = start + rowsPerStatement(results.count - start, on: executor.dialect)
            var sql = "INSERT INTO notification_deliveries (\(columns)) VALUES"
            var binds: [SQLValue] = [SQLValue(id)]
            for index in start..<end {
                let result = results[index]
                if index > start { sql += "," }
                let base = binds.count
                sql += " ($1, " + (1...8).map { "$\(base + $0)" }.joined(separator: ", ") + ")"
                binds += [
                    .text(result.token), SQLValue(result.ordinal), .text(result.status.rawValue),
                    SQLValue(result.reason), SQLValue(result.apnsID), SQLValue(result.invalidAt),
                    SQLValue(result.attempts), SQLValue(result.updatedAt),
                ]
            }
            let tokens = results[start..<end].map(\.token)
            let list = tokens.indices.map { "$\($0 + 2)" }.joined(separator: ", ")
            for row in try await executor.query(
                "SELECT token, status FROM notification_deliveries WHERE notification_id = $1 AND token IN (\(list))",
                [SQLValue(id)] + tokens.map(SQLValue.text)
            ) {
                let token = try row.string("token")
                // A token written twice: the earlier write's status is what it replaced.
                if before[token] == nil {
                    before[token] = DeliveryStatus(rawValue: try row.string("status")) ?? .pending
                }
            }
            try await executor.execute(sql + onConflict, binds)
            start = end
        }
        return before
    }
}
