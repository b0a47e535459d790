import Foundation
import HTTP2
import HeraldCore
import HeraldIO

/// The HTTP/2 connections to receivers, one per scheme, host and port, reused between deliveries:
/// at most ``WebhookConfiguration/maximumConnections`` (the least recently used is closed beyond
/// it), each closed after ``WebhookConfiguration/idleConnectionTimeout`` unused.
///
/// `https://` receivers are reached over TLS with ALPN `h2`, trusting the system roots plus
/// ``WebhookConfiguration/caFile``; `http://` ones (allowed by `HERALD_WEBHOOK_ALLOW_HTTP`) with
/// cleartext prior-knowledge HTTP/2. A receiver that does not speak HTTP/2 fails with a message
/// that says so.
actor WebhookConnections {
    private struct Entry {
        var connection: HTTP2ClientConnection
        var lastUsed: Duration
    }

    private let configuration: WebhookConfiguration
    private let clock: any HeraldClock
    private let tls: TLSContext
    private var entries: [String: Entry] = [:]

    init(configuration: WebhookConfiguration, clock: any HeraldClock) throws {
        self.configuration = configuration
        self.clock = clock
        var tls = TLSConfiguration.makeClient()
        tls.additionalTrustRootsFile = configuration.caFile
        self.tls = try TLSContext(configuration: tls)
    }

    /// Sends `request` to `target`'s origin over a reused or new connection.
    func send(_ request: HTTP2Request, to target: WebhookTarget) async throws -> HTTP2Response {
        let connection = try await connection(for: target)
        do {
            return try await connection.send(request)
        } catch {
            if !connection.status.isUsable { drop(target.origin, connection) }
            throw error
        }
    }

    /// Closes every connection.
    func closeAll() async {
        let connections = entries.values.map(\.connection)
        entries = [:]
        for connection in connections { await connection.close() }
    }

    private func connection(for target: WebhookTarget) async throws -> HTTP2ClientConnection {
        let now = clock.uptime()
        await closeIdle(now: now)
        if let entry = entries[target.origin] {
            if entry.connection.status.isUsable {
                entries[target.origin]?.lastUsed = now
                return entry.connection
            }
            entries[target.origin] = nil
            await entry.connection.close()
        }
        let connection = try await connect(target)
        // Another delivery may have connected meanwhile: keep one.
        if let raced = entries[target.origin], raced.connection.status.isUsable {
            await connection.close()
            return raced.connection
        }
        entries[target.origin] = Entry(connection: connection, lastUsed: clock.uptime())
        while entries.count > configuration.maximumConnections,
            let oldest = entries.min(by: { $0.value.lastUsed < $1.value.lastUsed })
        {
            entries[oldest.key] = nil
            await oldest.value.connection.close()
        }
        return connection
    }

    private func drop(_ origin: String, _ connection: HTTP2ClientConnection) {
        if entries[origin]?.connection === connection { entries[origin] = nil }
    }

    private func closeIdle(now: Duration) async {
        let limit = Duration(timeInterval: configuration.idleConnectionTimeout)
        for (origin, entry) in entries where now - entry.lastUsed > limit {
            entries[origin] = nil
            await entry.connection.close()
        }
    }

    private func connect(_ target: WebhookTarget) async throws -> HTTP2ClientConnection {
        var options = HTTP2ClientConnection.Configuration()
        options.connectTimeout = configuration.connectTimeout
        options.requestTimeout = configuration.requestTimeout
        options.maximumResponseBodySize = 64 * 1_024
        options.logger = Logger(label: "herald.webhooks.http2")
        let secure = target.scheme == "https"
        do {
            return try await HTTP2ClientConnection.connect(
                host: target.host,
                port: target.port,
                tls: secure ? tls : nil,
                configuration: options
            )
        } catch let error as HTTP2Error {
            if let tlsError = error.underlying as? TLSError, tlsError.code == .applicationProtocolNotNegotiated {
                throw WebhookDeliveryError(
                    "the receiver did not negotiate HTTP/2 (ALPN h2) at \(target.origin): Herald delivers webhooks "
                        + "over HTTP/2 only; enable HTTP/2 on the receiver or the proxy in front of it"
                )
            }
            if !secure {
                throw WebhookDeliveryError(
                    "cannot reach \(target.origin) with cleartext HTTP/2 (prior knowledge; the receiver must speak "
                        + "HTTP/2 without TLS): \(error.message)"
                )
            }
            throw WebhookDeliveryError(error.message)
        }
    }
}

/// A delivery that failed before the receiver answered; the message is what the webhook's
/// `last_error` shows.
struct WebhookDeliveryError: Error, CustomStringConvertible {
    var description: String

    init(_ description: String) {
        self.description = description
    }
}
