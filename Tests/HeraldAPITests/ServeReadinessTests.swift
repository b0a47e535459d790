import AsyncTestSupport
import DatabaseTestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `/readyz` answers anyone: when the database goes away, it says so and names nothing that
/// locates it (host, port, user, database name), while Herald's log keeps the driver's message.
@Suite("herald serve: /readyz when PostgreSQL goes away", .serialized)
struct ServeReadinessTests {
    @Test func readyzNamesNoDatabaseHostOnPostgres() async throws {
        let test = try await TestDatabase.make(.postgres, poolSize: 2)
        do {
            try await check(test)
            await test.remove()
        } catch {
            await test.remove()
            throw error
        }
    }

    func check(_ test: TestDatabase) async throws {
        // The database behind a port of our own, which then closes.
        let address = try #require(test.url.range(of: #"127\.0\.0\.1:\d+"#, options: .regularExpression))
        let targetPort = try #require(Int(test.url[address].split(separator: ":")[1]))
        let forwarder = try LoopbackForwarder(to: targetPort)
        let url = test.url.replacingCharacters(in: address, with: "127.0.0.1:\(forwarder.port)")
        let databaseName = try #require(url.split(separator: "/").last?.split(separator: "?").first)
        let herald = try HeraldProcess(
            arguments: ["serve", "--host", "127.0.0.1", "--port", "0"],
            environment: ["DATABASE_URL": url]
        )
        let port = try await herald.listeningPort()
        let base = "http://127.0.0.1:\(port)"
        #expect(try await fetch(base + "/readyz").status == 200)

        await forwarder.close()
        var ready = try await fetch(base + "/readyz")
        try await eventually("/readyz to fail") {
            ready = try await fetch(base + "/readyz")
            return ready.status == 503
        }
        #expect(ready.body.contains(#""database":{"error":"unreachable: "#), "\(ready.body)")
        for located in ["127.0.0.1", String(forwarder.port), "postgres", String(databaseName)] {
            #expect(!ready.body.contains(located), "/readyz names \(located): \(ready.body)")
        }
        herald.signal(SIGTERM)
        _ = try await herald.waitForExit(timeout: .seconds(15))
        #expect(herald.log.contains("readiness: the database check failed"), "\(herald.log)")
    }
}
