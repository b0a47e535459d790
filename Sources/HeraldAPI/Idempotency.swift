public import Foundation
public import HTTPRouting
public import HeraldCore
import HeraldCrypto
public import Jobs
public import Storage

/// `Idempotency-Key` for endpoints that create something: a retried request answers what the
/// first one answered instead of creating a second thing.
///
/// Keys are scoped per API key (only a SHA-256 of the API key is stored) and kept 24 hours in
/// `idempotency_keys`. With a key, a request first claims the row (a unique insert, so of two
/// concurrent requests only one runs); the handler's response is then stored and replayed
/// (status, body, `Content-Type`, `Location`, plus `Idempotent-Replayed: true`) to every later
/// request with the same key and the same method, path, query and body. Another request under
/// the same key is 409 `idempotency_key_reused`; one that arrives while the first still runs is
/// 409 `idempotency_request_in_progress`. A handler that throws or answers 5xx releases the key,
/// so the client may retry.
///
/// ```swift
/// router.post("/v1/things") { request in
///     try await keys.authorize(request)
///     return try await idempotency.run(request) { try await create($0) }
/// }
/// ```
public struct IdempotencyStore: Sendable {
    public static let headerName = "Idempotency-Key"
    /// How long a key and its response are kept.
    public static let retention: TimeInterval = 86_400
    /// How long a request may hold its key unanswered before another request with the key may
    /// take it over (the first instance died mid-request).
    public static let inProgressLease: TimeInterval = 600
    /// Allowed key lengths, in characters (printable ASCII).
    public static let allowedLengths = 1...255
    public static let jobKind = "idempotency.prune"

    /// Headers of the first response that a replay repeats.
    static let replayedHeaders = ["Content-Type", "Location"]

    public let database: any Database
    public let clock: any HeraldClock

    public init(database: any Database, clock: any HeraldClock = SystemClock()) {
        self.database = database
        self.clock = clock
    }

    /// Runs `handler` once per idempotency key, or at once when the request has no key.
    ///
    /// Call it after the request is authorized: the key's scope is the bearer key it carries.
    /// - Throws: ``HTTPServer/HTTPError`` 400 for a malformed key, 409 for a reused or busy key;
    ///   whatever `handler` throws.
    public func run(
        _ request: HTTPRequest,
        _ handler: (HTTPRequest) async throws -> HTTPResponse
    ) async throws -> HTTPResponse {
        guard let key = try Self.key(in: request) else { return try await handler(request) }
        let scope = Hex.encode(SHA256.hash(Array(APIKeys.bearerKey(in: request).utf8)))
        let fingerprint = Self.fingerprint(of: request)
        if let answer = try await claim(scope: scope, key: key, fingerprint: fingerprint) { return answer }

        let response: HTTPResponse
        do {
            response = try await handler(request)
        } catch {
            await release(scope: scope, key: key)
            throw error
        }
        if response.status >= 500 {
            await release(scope: scope, key: key)
            return response
        }
        var headers: [String] = []
        for name in Self.replayedHeaders {
            if let value = response.headers[name] { headers.append("\(name): \(value)") }
        }
        // The thing is created whatever happens here: a failure to record the answer is not the
        // client's to see, and the key's lease ends in ``inProgressLease``.
        _ = try? await database.execute(
            """
            UPDATE idempotency_keys SET status_code = $3, response_headers = $4, response_body = $5, expires_at = $6
            WHERE api_key_hash = $1 AND idempotency_key = $2 AND status_code IS NULL
            """,
            [
                .text(scope), .text(key), .integer(Int64(response.status)), .text(headers.joined(separator: "\n")),
                .text(String(decoding: response.body, as: UTF8.self)),
                SQLValue(clock.now().addingTimeInterval(Self.retention)),
            ]
        )
        return response
    }

    /// Inserts the key's row, or answers from the row already there; `nil`: this request holds
    /// the key now and runs.
    private func claim(scope: String, key: String, fingerprint: String) async throws -> HTTPResponse? {
        // A second round follows the removal of an expired row.
        for _ in 0..<2 {
            let now = clock.now()
            let inserted = try await database.execute(
                """
                INSERT INTO idempotency_keys (api_key_hash, idempotency_key, request_hash, created_at, expires_at)
                VALUES ($1, $2, $3, $4, $5) ON CONFLICT (api_key_hash, idempotency_key) DO NOTHING
                """,
                [
                    .text(scope), .text(key), .text(fingerprint), SQLValue(now),
                    SQLValue(now.addingTimeInterval(Self.inProgressLease)),
                ]
            )
            if inserted == 1 { return nil }
            guard
                let row = try await database.queryFirst(
                    """
                    SELECT request_hash, status_code, response_headers, response_body,
                        CASE WHEN expires_at <= $3 THEN 1 ELSE 0 END AS expired
                    FROM idempotency_keys WHERE api_key_hash = $1 AND idempotency_key = $2
                    """,
                    [.text(scope), .text(key), SQLValue(now)]
                )
            else { continue }
            if try row.int("expired") == 1 {
                try await database.execute(
                    "DELETE FROM idempotency_keys WHERE api_key_hash = $1 AND idempotency_key = $2 AND expires_at <= $3",
                    [.text(scope), .text(key), SQLValue(now)]
                )
                continue
            }
            guard try row.string("request_hash") == fingerprint else {
                throw HTTPError(
                    status: 409,
                    code: "idempotency_key_reused",
                    message: "this Idempotency-Key was used in the last 24 hours for a different request (method, "
                        + "path, query or body); send a new key for a new request",
                    field: Self.headerName
                )
            }
            guard let status = try row.optionalInt("status_code") else { break }
            return try Self.replay(status: status, row: row)
        }
        throw HTTPError(
            status: 409,
            code: "idempotency_request_in_progress",
            message: "a request with this Idempotency-Key is still being handled; retry after it finished to get "
                + "its response",
            field: Self.headerName,
            headers: ["Retry-After": "1"]
        )
    }

    /// Frees the key after a failed attempt, so that a retry runs again.
    private func release(scope: String, key: String) async {
        _ = try? await database.execute(
            "DELETE FROM idempotency_keys WHERE api_key_hash = $1 AND idempotency_key = $2 AND status_code IS NULL",
            [.text(scope), .text(key)]
        )
    }

    private static func replay(status: Int64, row: SQLRow) throws -> HTTPResponse {
        var headers = HTTPHeaders()
        for line in try row.optionalString("response_headers")?.split(separator: "\n") ?? [] {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let value = line[line.index(after: colon)...].drop { $0 == " " }
            headers.add(name: String(line[..<colon]), value: String(value))
        }
        headers.replaceOrAdd(name: "Idempotent-Replayed", value: "true")
        let body = Array((try row.optionalString("response_body") ?? "").utf8)
        var response = HTTPResponse(status: Int(status), headers: headers, body: body)
        // A replayed refusal is logged with its code, as the first answer was.
        if status >= 400, let code = (try? JSONValue.parse(body))?["error"]?["code"]?.stringValue {
            response.errorCode = code
        }
        return response
    }

    /// The request's key, `nil` without the header.
    ///
    /// - Throws: 400 `invalid_idempotency_key` unless it is 1–255 printable ASCII characters.
    static func key(in request: HTTPRequest) throws(HTTPError) -> String? {
        guard let key = request.headers[headerName] else { return nil }
        let printable = key.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F }
        guard printable, allowedLengths.contains(key.utf8.count) else {
            throw HTTPError(
                status: 400,
                code: "invalid_idempotency_key",
                message: "the Idempotency-Key header must be \(allowedLengths.lowerBound) to "
                    + "\(allowedLengths.upperBound) printable ASCII characters, e.g. a UUID",
                field: headerName
            )
        }
        return key
    }

    /// SHA-256 over method, raw path, query and body, each length-prefixed so that no two
    /// requests share an encoding.
    static func fingerprint(of request: HTTPRequest) -> String {
        var bytes: [UInt8] = []
        func append(_ part: some Collection<UInt8>) {
            bytes += Array(String(part.count).utf8) + [0x3A]
            bytes += part
        }
        append(request.method.utf8)
        append(request.rawPath.utf8)
        for item in request.query {
            append(item.name.utf8)
            append(item.value.utf8)
        }
        append(request.body)
        return Hex.encode(SHA256.hash(bytes))
    }

    // MARK: Expiry

    /// The hourly job that runs ``prune(now:)``.
    private var job: HourlyJob {
        HourlyJob(kind: Self.jobKind) { now in _ = try await prune(now: now) }
    }

    /// Registers the pruning job's handler, on the store's clock.
    public func register(on handlers: inout JobHandlers) {
        job.register(on: &handlers, clock: clock)
    }

    /// Adds the hourly pruning job unless it exists (safe from several instances at once).
    public func schedule(on queue: JobQueue) async throws {
        try await job.schedule(on: queue)
    }

    /// Deletes the keys whose time is up; returns how many.
    @discardableResult
    public func prune(now: Date) async throws -> Int {
        try await database.execute("DELETE FROM idempotency_keys WHERE expires_at <= $1", [SQLValue(now)])
    }
}
