import DatabaseTestSupport
import Foundation
import HeraldCore
import Storage
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `herald serve` on PostgreSQL end to end: a retried `POST /v1/notifications` with the same
/// `Idempotency-Key` creates one notification, and a database that is gone answers 503.
@Suite("herald serve: database failures")
struct ServeDatabaseFailureTests {
    static func post(
        _ base: String,
        key: String,
        idempotencyKey: String,
        body: String
    ) async throws -> (status: Int, retryAfter: String?, replayed: String?, body: String) {
        var request = URLRequest(url: URL(string: "\(base)/v1/notifications")!)
        request.httpMethod = "POST"
        request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization")
        request.setValue(idempotencyKey, forHTTPHeaderField: "Idempotency-Key")
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(body.utf8)
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = response as? HTTPURLResponse
        return (
            http?.statusCode ?? 0, http?.value(forHTTPHeaderField: "Retry-After"),
            http?.value(forHTTPHeaderField: "Idempotent-Replayed"), String(decoding: data, as: UTF8.self)
        )
    }

    @Test func idempotentRetryAndDatabaseGoneOnPostgres() async throws {
        let test = try await TestDatabase.make(.postgres, poolSize: 2)
        let key = "serve-test-key-0123456789"
        let herald = try HeraldProcess(
            arguments: ["serve", "--simulator", "--host", "127.0.0.1", "--port", "0"],
            environment: ["DATABASE_URL": test.url, "TOPIC": "org.example.retry", "HERALD_API_KEYS": key]
        )
        do {
            let port = try await herald.listeningPort()
            let base = "http://127.0.0.1:\(port)"
            let sendAt = Int(Date().timeIntervalSince1970) + 3_600
            let body =
                #"{"tokens":["\#(String(repeating: "ab", count: 32))"],"payload":{"aps":{"alert":"Hi"}},"send_at":\#(sendAt)}"#
            let first = try await Self.post(base, key: key, idempotencyKey: "retry-1", body: body)
            #expect(first.status == 202)
            let retry = try await Self.post(base, key: key, idempotencyKey: "retry-1", body: body)
            #expect(retry.status == 202)
            #expect(retry.body == first.body)
            #expect(retry.replayed == "true")
            let other = try await Self.post(base, key: key, idempotencyKey: "retry-1", body: body + " ")
            #expect(other.status == 409)
            #expect(other.body.contains("idempotency_key_reused"))
            let db = try await test.open()
            #expect(try await db.query("SELECT count(*) AS n FROM notifications", [])[0].int("n") == 1)
            await db.close()

            // The database goes away (its connections are terminated and it cannot be reconnected).
            await test.remove()
            let gone = try await Self.post(base, key: key, idempotencyKey: "retry-2", body: body)
            #expect(gone.status == 503)
            #expect(gone.retryAfter == "5")
            #expect(gone.body.contains(#""code":"database_unavailable""#))
            #expect(!herald.log.contains(key), "the API key must not be logged")
            herald.signal(SIGTERM)
            // Fails the test, with the log, unless herald exits.
            _ = try await herald.waitForExit(timeout: .seconds(15))
        } catch {
            await test.remove()
            throw error
        }
    }
}
