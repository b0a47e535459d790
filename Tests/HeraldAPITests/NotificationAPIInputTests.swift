import APNsSimulator
import DatabaseTestSupport
import Foundation
import HTTPRouting
import HeraldAPI
import HeraldCore
import Jobs
import Storage
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension NotificationAPITests.Harness {
    /// A request with exactly these body bytes and headers (no `Content-Type` unless given).
    func raw(
        _ method: String,
        _ path: String,
        body: String? = nil,
        contentType: String? = nil,
        headers: [String: String] = [:]
    ) async throws -> (status: Int, json: [String: Any], headers: [String: String]) {
        var request = URLRequest(url: URL(string: base + path)!)
        request.httpMethod = method
        request.setValue("Bearer \(NotificationAPITests.key)", forHTTPHeaderField: "Authorization")
        if let contentType { request.setValue(contentType, forHTTPHeaderField: "Content-Type") }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        if let body { request.httpBody = Data(body.utf8) }
        let (data, response) = try await URLSession.shared.data(for: request)
        let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
        let http = response as? HTTPURLResponse
        var fields: [String: String] = [:]
        for (name, value) in http?.allHeaderFields ?? [:] {
            if let name = name as? String, let value = value as? String { fields[name.lowercased()] = value }
        }
        return (http?.statusCode ?? 0, object, fields)
    }
}

/// `/v1`'s strict input and the notifications list, over the real HTTP server.
@Suite("Notifications API: strict input and listing over HTTP")
struct NotificationAPIInputTests {
    static let token = String(repeating: "ab", count: 32)
    static let valid = #"{"tokens": ["\#(token)"], "payload": {"aps": {"alert": "Hi"}}}"#

    static func error(_ json: [String: Any]) -> (code: String?, message: String, field: String?) {
        let error = json["error"] as? [String: Any]
        return (error?["code"] as? String, error?["message"] as? String ?? "", error?["field"] as? String)
    }

    @Test("trailing commas, duplicate keys and broken JSON are 400s naming line and column; nothing is sent")
    func strictJSON() async throws {
        try await NotificationAPITests.with(.sqliteMemory) { harness in
            let trailing = "{\"tokens\": [\"\(Self.token)\"],\n  \"payload\": {\"aps\": {\"alert\": \"Hi\"},},\n}"
            let comma = try await harness.raw(
                "POST",
                "/v1/notifications",
                body: trailing,
                contentType: "application/json"
            )
            #expect(comma.status == 400)
            #expect(Self.error(comma.json).code == "invalid_json")
            #expect(Self.error(comma.json).message.contains("line 2, column 37"), "\(comma.json)")
            #expect(Self.error(comma.json).message.contains("trailing comma"), "\(comma.json)")

            let repeated = #"{"tokens": ["\#(Self.token)"], "payload": {"aps": {"alert": "a", "alert": "b"}}}"#
            let duplicate = try await harness.raw(
                "POST",
                "/v1/notifications",
                body: repeated,
                contentType: "application/json"
            )
            #expect(duplicate.status == 400)
            #expect(Self.error(duplicate.json).code == "duplicate_key")
            #expect(Self.error(duplicate.json).field == "payload.aps.alert")
            #expect(Self.error(duplicate.json).message.contains("line 1, column 116"), "\(duplicate.json)")

            let broken = try await harness.raw(
                "POST",
                "/v1/notifications",
                body: "{\n'tokens': []}",
                contentType: "application/json"
            )
            #expect(broken.status == 400)
            #expect(Self.error(broken.json).code == "invalid_json")
            #expect(Self.error(broken.json).message.contains("line 2, column 1"), "\(broken.json)")
            #expect(harness.simulator.deliveries().isEmpty)
            #expect(try await harness.queue.list().isEmpty)
        }
    }

    @Test("a body needs Content-Type: application/json (charset allowed), else 415 saying what to send")
    func contentType() async throws {
        try await NotificationAPITests.with(.sqliteMemory) { harness in
            for contentType in [
                nil, "text/plain", "application/x-www-form-urlencoded", "application/json; charset=latin1",
            ] {
                let answer = try await harness.raw(
                    "POST",
                    "/v1/notifications",
                    body: Self.valid,
                    contentType: contentType
                )
                #expect(answer.status == 415, "\(contentType ?? "none")")
                #expect(Self.error(answer.json).code == "unsupported_media_type")
                #expect(Self.error(answer.json).message.contains("Content-Type: application/json"))
            }
            for contentType in [
                "application/json", "Application/JSON; charset=UTF-8", "application/json;charset=\"utf-8\"",
            ] {
                let answer = try await harness.raw(
                    "POST",
                    "/v1/notifications",
                    body: Self.valid,
                    contentType: contentType
                )
                #expect(answer.status == 202, "\(contentType): \(answer.json)")
            }
        }
    }

    @Test("unknown query parameters are 400s listing the known ones, on every /v1 route")
    func unknownQueryParameters() async throws {
        try await NotificationAPITests.with(.sqliteMemory) { harness in
            let created = try await harness.raw(
                "POST",
                "/v1/notifications?dry_run=true",
                body: Self.valid,
                contentType: "application/json"
            )
            #expect(created.status == 400)
            #expect(Self.error(created.json).code == "unknown_parameter")
            #expect(Self.error(created.json).field == "dry_run")
            #expect(Self.error(created.json).message.contains("wait"))
            #expect(try await harness.queue.list().isEmpty)
            let id = UUID().uuidString.lowercased()
            let routes: [(String, String, String)] = [
                ("GET", "/v1/notifications?state=done", "created_after"),
                ("GET", "/v1/notifications/\(id)?page=2", "cursor"),
                ("DELETE", "/v1/notifications/\(id)?force=1", "takes no query parameters"),
                ("GET", "/v1/dead-tokens?after=0", "since"),
            ]
            for (method, path, known) in routes {
                let answer = try await harness.raw(method, path)
                #expect(answer.status == 400, "\(method) \(path)")
                #expect(Self.error(answer.json).code == "unknown_parameter", "\(method) \(path)")
                #expect(Self.error(answer.json).message.contains(known), "\(method) \(path): \(answer.json)")
            }
        }
    }

    @Test("send_at and expiration in milliseconds get a hint about units")
    func milliseconds() async throws {
        try await NotificationAPITests.with(.sqliteMemory) { harness in
            let milliseconds = Int(Date().timeIntervalSince1970 + 3_600) * 1_000
            for field in ["send_at", "expiration"] {
                let body = #"{"tokens": ["\#(Self.token)"], "payload": {"aps": {}}, "\#(field)": \#(milliseconds)}"#
                let answer = try await harness.raw(
                    "POST",
                    "/v1/notifications",
                    body: body,
                    contentType: "application/json"
                )
                #expect(answer.status == 400)
                #expect(Self.error(answer.json).field == field)
                #expect(Self.error(answer.json).message.contains("looks like milliseconds"), "\(answer.json)")
                #expect(Self.error(answer.json).message.contains("\(milliseconds / 1_000)"), "\(answer.json)")
            }
            let since = try await harness.raw("GET", "/v1/notifications?created_after=\(milliseconds)")
            #expect(since.status == 400)
            #expect(Self.error(since.json).message.contains("looks like milliseconds"), "\(since.json)")
        }
    }

    @Test("202 carries Location, also when an Idempotency-Key replays it", arguments: [Backend.sqliteFile, .postgres])
    func location(_ backend: Backend) async throws {
        try await NotificationAPITests.with(backend) { harness in
            let key = ["Idempotency-Key": "location-\(UUID())"]
            let first = try await harness.raw(
                "POST",
                "/v1/notifications",
                body: Self.valid,
                contentType: "application/json",
                headers: key
            )
            #expect(first.status == 202)
            let id = try #require(first.json["id"] as? String)
            #expect(first.headers["location"] == "/v1/notifications/\(id)")
            let replay = try await harness.raw(
                "POST",
                "/v1/notifications",
                body: Self.valid,
                contentType: "application/json",
                headers: key
            )
            #expect(replay.status == 202)
            #expect(replay.headers["location"] == "/v1/notifications/\(id)")
            let read = try await harness.raw("GET", try #require(first.headers["location"]))
            #expect(read.status == 200)
            #expect(read.json["id"] as? String == id)
        }
    }

    @Test(
        "GET /v1/notifications lists newest first with filters and keyset pages",
        arguments: [Backend.sqliteFile, .postgres]
    )
    func list(_ backend: Backend) async throws {
        try await NotificationAPITests.with(backend) { harness in
            let sendAt = Int(Date().timeIntervalSince1970) + 3_600
            var ids: [String] = []
            for index in 0..<5 {
                let body =
                    #"{"tokens": ["\#(String(format: "%064x", index + 1))"], "payload": {"aps": {}}, "send_at": \#(sendAt)}"#
                let created = try await harness.raw(
                    "POST",
                    "/v1/notifications",
                    body: body,
                    contentType: "application/json"
                )
                ids.append(try #require(created.json["id"] as? String))
            }
            #expect(try await harness.raw("DELETE", "/v1/notifications/\(ids[2])").status == 200)

            let all = try await harness.raw("GET", "/v1/notifications")
            #expect(all.status == 200)
            let listed = try #require(all.json["notifications"] as? [[String: Any]])
            #expect(Set(listed.compactMap { $0["id"] as? String }) == Set(ids))
            #expect(all.json["next_cursor"] is NSNull, "present, null: the last page")
            let created = listed.compactMap { ($0["created_at"] as? String).flatMap(RFC3339.date(from:)) }
            #expect(created.count == 5)
            #expect(zip(created, created.dropFirst()).allSatisfy { $0 >= $1 }, "newest first")
            #expect(listed.first?["status"] is String && listed.first?["tokens"] as? Int == 1)

            var paged: [String] = []
            var path = "/v1/notifications?limit=2&app=com.example.api"
            while true {
                let page = try await harness.raw("GET", path)
                #expect(page.status == 200)
                paged += (page.json["notifications"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
                guard let cursor = page.json["next_cursor"] as? String else { break }
                path = "/v1/notifications?limit=2&app=com.example.api&cursor=\(cursor)"
            }
            #expect(paged == listed.compactMap { $0["id"] as? String })

            let cancelled = try await harness.raw("GET", "/v1/notifications?status=cancelled")
            #expect(
                (cancelled.json["notifications"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == [ids[2]]
            )
            let other = try await harness.raw("GET", "/v1/notifications?app=com.example.other")
            #expect((other.json["notifications"] as? [[String: Any]])?.isEmpty == true)
            let future = try await harness.raw("GET", "/v1/notifications?created_after=\(sendAt)")
            #expect((future.json["notifications"] as? [[String: Any]])?.isEmpty == true)
            let past = try await harness.raw("GET", "/v1/notifications?created_before=2020-01-01T00:00:00Z")
            #expect((past.json["notifications"] as? [[String: Any]])?.isEmpty == true)

            for (query, field) in [
                ("status=sent", "status"), ("limit=0", "limit"), ("cursor=x", "cursor"),
                ("created_after=soon", "created_after"),
                ("created_after=2030-01-01T00:00:00Z&created_before=2029-01-01T00:00:00Z", "created_before"),
            ] {
                let answer = try await harness.raw("GET", "/v1/notifications?\(query)")
                #expect(answer.status == 400, "\(query)")
                #expect(Self.error(answer.json).field == field, "\(query): \(answer.json)")
            }
        }
    }
}

/// A refusal replayed for a repeated `Idempotency-Key` keeps its error code for the access log.
@Suite("Idempotency: replayed refusals")
struct IdempotentRefusalTests {
    @Test("a replayed 4xx carries its error code, as the first answer did", arguments: [Backend.sqliteFile, .postgres])
    func replayedCode(_ backend: Backend) async throws {
        try await withDatabase(backend) { db, _ in
            try await Migrator.migrate(db, HeraldSchema.migrations, logger: TestDatabase.quiet)
            let store = IdempotencyStore(database: db)
            let request = HTTPRequest(
                method: "POST",
                path: "/v1/notifications",
                headers: ["Authorization": "Bearer replay-key", "Idempotency-Key": "refused-1"],
                body: Array("{}".utf8)
            )
            let refuse: (HTTPRequest) async throws -> HTTPResponse = { _ in
                .error(status: 400, code: "missing_field", message: "tokens is missing", field: "tokens")
            }
            let first = try await store.run(request, refuse)
            let replay = try await store.run(request) { _ in
                Issue.record("the handler ran again")
                return HTTPResponse()
            }
            #expect(first.errorCode == "missing_field")
            #expect(replay.status == 400)
            #expect(replay.headers["Idempotent-Replayed"] == "true")
            #expect(replay.errorCode == "missing_field")
        }
    }
}
