import AsyncTestSupport
import DatabaseTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A `herald serve --simulator` for the Live Activities end-to-end tests, on a database of the
/// given backend: calls with the API key or a client token, and the simulator's deliveries.
struct LiveActivityServer {
    static let key = "live-activity-key-0123456789"
    static let secret = "live-activity-secret-0123456789abcdef012"
    static let topic = "org.example.live"

    let herald: HeraldProcess
    let base: String

    static func start(databaseURL: String, environment: [String: String] = [:]) async throws -> LiveActivityServer {
        let herald = try HeraldProcess(
            arguments: ["serve", "--simulator", "--host", "127.0.0.1", "--port", "0"],
            environment: [
                "DATABASE_URL": databaseURL, "TOPIC": topic, "HERALD_API_KEYS": key,
                "HERALD_CLIENT_TOKEN_SECRET": secret,
            ].merging(environment) { _, new in new }
        )
        return LiveActivityServer(herald: herald, base: "http://127.0.0.1:\(try await herald.listeningPort())")
    }

    func stop() async throws {
        herald.signal(SIGTERM)
        #expect(try await herald.waitForExit(timeout: .seconds(20)) == 0, "log:\n\(herald.log)")
    }

    /// A request with the API key (or `token`); the status and the body parsed.
    @discardableResult
    func call(
        _ method: String,
        _ path: String,
        _ body: Any? = nil,
        token: String = LiveActivityServer.key
    ) async throws -> (status: Int, body: [String: Any]) {
        let text = try body.map { String(decoding: try JSONSerialization.data(withJSONObject: $0), as: UTF8.self) }
        return try await raw(method, path, text, token: token)
    }

    func raw(
        _ method: String,
        _ path: String,
        _ text: String?,
        token: String = LiveActivityServer.key
    ) async throws -> (status: Int, body: [String: Any]) {
        let answer = try await fetch(
            base + path,
            method: method,
            headers: ["Authorization": "Bearer \(token)", "Content-Type": "application/json"],
            body: text
        )
        let object = (try? JSONSerialization.jsonObject(with: Data(answer.body.utf8))) as? [String: Any]
        return (answer.status, object ?? [:])
    }

    /// A client token for `user` from `herald client-token`.
    static func clientToken(_ user: String) async throws -> String {
        let result = try await JobsCommandTests.herald(
            ["client-token", "--user", user],
            environment: ["HERALD_CLIENT_TOKEN_SECRET": secret]
        )
        try #require(result.status == 0, "herald client-token: \(result.error)")
        return result.output.trimmingCharacters(in: .newlines)
    }

    /// The simulator's deliveries, oldest first, optionally for one token.
    func deliveries(token: String? = nil) async throws -> [[String: Any]] {
        let query = token.map { "&token=\($0)" } ?? ""
        let (_, body) = try await call("GET", "/simulator/deliveries?limit=1000" + query)
        return ((body["deliveries"] as? [[String: Any]]) ?? []).reversed()
    }

    /// Waits until the simulator holds `count` deliveries for `token` and returns them, oldest first.
    func deliveries(token: String, count: Int) async throws -> [[String: Any]] {
        var found: [[String: Any]] = []
        try await eventually(
            "\(count) deliveries to \(token.prefix(8)); found \(found.count)\nlog:\n\(herald.log)",
            timeout: .seconds(30)
        ) {
            found = try await deliveries(token: token)
            return found.count >= count
        }
        return found
    }

    /// Waits until the activity is in `state` and returns it.
    func activity(_ id: String, state: String) async throws -> [String: Any] {
        var body: [String: Any] = [:]
        try await eventually("activity \(id) \(state); it is \(body)\nlog:\n\(herald.log)", timeout: .seconds(30)) {
            body = try await call("GET", "/v1/live-activities/\(id)").body
            return body["state"] as? String == state
        }
        return body
    }

    /// A database of `backend` for a herald process (SQLite in a file, or a new PostgreSQL database).
    ///
    /// Callers remove it with `defer { Task { await database.remove() } }`, as JobQueueTests and
    /// WebhookRestartTests do: `defer` cannot await, the herald process using it has exited by
    /// then, and a removal that does not finish only leaves a database in the throwaway server.
    static func database(_ backend: Backend) async throws -> TestDatabase {
        try await TestDatabase.make(backend == .sqliteMemory ? .sqliteFile : backend, poolSize: 4)
    }
}

extension Dictionary where Key == String, Value == Any {
    /// The `live-activity` (silent) or `aps` object of a delivery's payload.
    func payload(_ key: String) -> [String: Any] {
        ((self["payload"] as? [String: Any])?[key] as? [String: Any]) ?? [:]
    }
}
