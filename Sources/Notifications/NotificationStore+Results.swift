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
    /// (notification, token), inside the caller's transaction.
    ///
    /// On PostgreSQL each column goes as one array parameter, unnested into rows by the server:
    /// one statement of nine parameters, whatever the number of rows, instead of nine parameters a
    /// row for the server to parse and bind. SQLite, in the same process, takes multi-row
    /// `VALUES` of ``batchSize`` rows.
    static func upsert(_ results: [DeliveryResult], of id: UUID, on executor: any DatabaseExecutor) async throws {
        guard !results.isEmpty else { return }
        let columns = "notification_id, token, ordinal, status, reason, apns_id, invalid_at, attempts, updated_at"
        if executor.dialect == .postgres {
            try await executor.execute(
                """
                INSERT INTO notification_deliveries (\(columns))
                SELECT $1, * FROM unnest($2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[],
                    $7::bigint[], $8::bigint[], $9::bigint[])
                """ + onConflict,
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
            return
        }
        var start = 0
        while start < results.count {
            let end = min(start + batchSize, results.count)
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
            try await executor.execute(sql + onConflict, binds)
            start = end
        }
    }
}
