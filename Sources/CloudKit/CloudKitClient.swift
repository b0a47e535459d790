import Foundation
import HTTP2
public import HeraldCore
public import HeraldIO

/// A CloudKit Web Services client for the public database, authenticated with a
/// server-to-server key: creates, queries and deletes records over HTTP/2 (the same HTTP/2 and TLS
/// pieces as Herald's APNs client and webhooks).
///
/// ```swift
/// let client = try CloudKitClient(signer: try CloudKitSigner(keyID: keyID, pemRepresentation: pem))
/// let record = try await client.createRecord(
///     container: "iCloud.com.example.app", environment: .production,
///     recordType: "WakePing", fields: ["ts": .int64(Int64(Date().timeIntervalSince1970))])
/// let deleted = try await client.cleanup(
///     container: "iCloud.com.example.app", environment: .production, recordType: "WakePing", sortField: "ts", keep: 3)
/// await client.close()
/// ```
///
/// Retryable failures (``CloudKitError/isRetryable``: `THROTTLED`, `TRY_AGAIN_LATER`, 5xx, no
/// answer) are retried up to ``Configuration/maximumAttempts`` times in all, after CloudKit's
/// `retryAfter` or else with ``Configuration/backoff``; the last failure is thrown. Others are
/// thrown at once with CloudKit's reason.
public final class CloudKitClient: Sendable {
    /// Where CloudKit is and how hard to try.
    public struct Configuration: Sendable {
        /// CloudKit's origin (`CLOUDKIT_URL`); a simulator's `https://127.0.0.1:PORT` in tests.
        public var url = "https://api.apple-cloudkit.com"
        /// Extra root certificates (PEM) to trust (`CLOUDKIT_CA_FILE`).
        public var caFile: String?
        public var connectTimeout: Duration = .seconds(10)
        public var requestTimeout: Duration = .seconds(30)
        /// Attempts per request, the first included.
        public var maximumAttempts = 4
        /// The waits between attempts when CloudKit gives no `retryAfter`.
        public var backoff = Backoff(initial: .milliseconds(500), maximum: .seconds(30), jitter: .equal)
        /// A `retryAfter` longer than this is not waited for: the error is thrown for the caller
        /// (a scheduler) to retry later.
        public var maximumRetryAfter: Duration = .seconds(60)
        /// Signing dates and the waits between attempts.
        public var clock: any HeraldClock = SystemClock()
        public var eventLoop: EventLoop = .shared
        public var logger = Logger(label: "herald.cloudkit")

        public init() {}
    }

    public let configuration: Configuration
    public let signer: CloudKitSigner
    private let connection: CloudKitConnection

    /// - Throws: ``CloudKitError`` with code ``CloudKitError/Code/invalidConfiguration`` for a URL
    ///   that is not an origin or a CA file that cannot be read.
    public init(signer: CloudKitSigner, configuration: Configuration = Configuration()) throws(CloudKitError) {
        self.signer = signer
        self.configuration = configuration
        var options = HTTP2ClientConnection.Configuration()
        options.connectTimeout = configuration.connectTimeout
        options.requestTimeout = configuration.requestTimeout
        options.maximumResponseBodySize = 8 << 20
        options.eventLoop = configuration.eventLoop
        options.logger = Logger(label: "herald.cloudkit.http2")
        connection = try CloudKitConnection(
            origin: try CloudKitConnection.Origin(url: configuration.url),
            caFile: configuration.caFile,
            options: options
        )
    }

    /// Closes the connection.
    public func close() async {
        await connection.close()
    }

    /// `/database/1/{container}/{environment}/public/records/{operation}`.
    static func subpath(
        container: String,
        environment: CloudKitEnvironment,
        operation: String
    ) throws(CloudKitError)
        -> String
    {
        guard isWellFormedContainer(container) else {
            throw CloudKitError(
                .invalidConfiguration,
                reason: "'\(container.prefix(100))' is not a container identifier: use iCloud.<bundle-like name>, "
                    + "such as iCloud.com.example.app"
            )
        }
        return "/database/1/\(container)/\(environment.rawValue)/public/records/\(operation)"
    }

    /// `iCloud.` then letters, digits, `.`, `-` and `_`, 255 bytes at most.
    static func isWellFormedContainer(_ container: String) -> Bool {
        container.hasPrefix("iCloud.") && container.utf8.count > 7 && container.utf8.count <= 255
            && container.utf8.allSatisfy { byte in
                (48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte) || byte == 45
                    || byte == 46 || byte == 95
            }
    }

    /// POSTs `body` to `subpath`, signed, with the retry rule; returns the 2xx answer's body.
    func post(_ subpath: String, body: [UInt8]) async throws(CloudKitError) -> [UInt8] {
        try await retrying { () async throws(CloudKitError) -> [UInt8] in
            try await self.sendOnce(subpath, body: body)
        }
    }

    /// Runs `operation` with the retry rule.
    func retrying<T: Sendable>(_ operation: () async throws(CloudKitError) -> T) async throws(CloudKitError) -> T {
        var attempt = 1
        while true {
            do {
                return try await operation()
            } catch {
                guard error.isRetryable, attempt < configuration.maximumAttempts else { throw error }
                let wait = error.retryAfter ?? configuration.backoff.delay(afterAttempt: attempt)
                guard wait <= configuration.maximumRetryAfter else { throw error }
                configuration.logger.notice(
                    "CloudKit request will be retried",
                    metadata: [
                        "code": .string(error.code.rawValue), "attempt": .int(attempt),
                        "wait_ms": .int(
                            Int(wait.components.seconds * 1000 + wait.components.attoseconds / 1_000_000_000_000_000)
                        ),
                    ]
                )
                let code = error.code
                do {
                    try await configuration.clock.sleep(for: wait)
                } catch {
                    throw CloudKitError(.cancelled, reason: "cancelled while waiting to retry after \(code)")
                }
                attempt += 1
            }
        }
    }

    /// One signed POST, without retries; returns the 2xx answer's body.
    func sendOnce(_ subpath: String, body: [UInt8]) async throws(CloudKitError) -> [UInt8] {
        let signed = try signer.sign(body: body, subpath: subpath, date: configuration.clock.now())
        var request = HTTP2Request(method: "POST", path: subpath, body: body)
        request.headers.add(name: "content-type", value: "application/json")
        for field in signed.fields {
            request.headers.add(name: field.name.lowercased(), value: field.value, neverIndex: true)
        }
        let response: HTTP2Response
        do {
            response = try await connection.send(request)
        } catch is CancellationError {
            throw CloudKitError(.cancelled, reason: "the request was cancelled")
        } catch let error as CloudKitError {
            throw error
        } catch {
            throw CloudKitError(
                .connectionFailed,
                reason: "no answer from \(configuration.url): \(error)"
            )
        }
        guard (200..<300).contains(response.status) else {
            throw CloudKitResponse.failure(response.body, status: response.status)
        }
        return response.body
    }
}
