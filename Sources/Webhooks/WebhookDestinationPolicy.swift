public import HeraldCore
import HeraldIO
import Synchronization

/// Where webhooks may deliver: public addresses only, unless `HERALD_WEBHOOK_ALLOW_PRIVATE=1`.
///
/// Checked twice. When a webhook is created (``check(url:)``): a host that is an address literal
/// in a refused range (``WebhookAddress/refusedRange``), or a name whose every address is in one,
/// is refused with 400 `destination_not_allowed`. A name that does not resolve at that moment
/// (DNS down, a record not yet published) is accepted: creation must not depend on DNS being up,
/// and the second check covers it. At delivery the address curl is about to connect to is checked
/// again (`CURLOPT_OPENSOCKETFUNCTION`), so a name that resolves differently later (DNS
/// rebinding) still reaches no refused address.
public struct WebhookDestinationPolicy: Sendable {
    /// Resolves a host name to numeric addresses (`"93.184.216.34"`, `"2606:2800::1"`).
    public typealias Resolve = @Sendable (_ host: String, _ port: Int) async throws -> [String]

    /// `HERALD_WEBHOOK_ALLOW_PRIVATE`: every destination is allowed.
    public var allowPrivate: Bool
    /// How names are resolved at creation: getaddrinfo unless a test injects another.
    public var resolve: Resolve
    /// How long creation waits for a name to resolve before accepting it unchecked.
    public var resolveTimeout: Duration
    let refusals: Counter

    /// - Parameters:
    ///   - allowPrivate: allow every destination (`HERALD_WEBHOOK_ALLOW_PRIVATE=1`).
    ///   - resolve: the resolver; getaddrinfo on Herald's DNS threads by default.
    ///   - metrics: where `herald_webhook_destinations_refused_total` is counted.
    public init(
        allowPrivate: Bool = false,
        resolve: Resolve? = nil,
        resolveTimeout: Duration = .seconds(5),
        metrics: MetricsRegistry = .shared
    ) {
        self.allowPrivate = allowPrivate
        self.resolve =
            resolve ?? { host, port in
                try await Resolver.resolve(host: host, port: port).map(\.host)
            }
        self.resolveTimeout = resolveTimeout
        self.refusals = WebhookMetrics.destinationsRefused(metrics)
    }

    /// Refuses a webhook URL whose host is, or resolves only to, refused addresses.
    ///
    /// - Throws: ``WebhookError`` `destination_not_allowed` (field `url`); an unparsable URL is
    ///   left to ``WebhookRequest/parse(_:allowHTTP:)``, which has already refused it.
    public func check(url: String) async throws(WebhookError) {
        guard let target = try checkLiteral(url: url) else { return }
        let addresses = await lookUp(target.host, port: target.port)
        let ranges = addresses.compactMap { WebhookAddress(literal: $0) }.map(\.refusedRange)
        guard !ranges.isEmpty, ranges.allSatisfy({ $0 != nil }), let range = ranges.first ?? nil else { return }
        refusals.increment(labels: [("stage", "creation")])
        // The addresses themselves are not named: the message would tell a key holder what the
        // host's internal names resolve to.
        throw Self.refusal(
            "url's host \(String(target.host.prefix(64))) resolves only to addresses Herald does not deliver to "
                + "(such as \(range.phrase))"
        )
    }

    /// The part of ``check(url:)`` that needs no DNS: refuses a host that is an address literal
    /// in a refused range.
    ///
    /// - Returns: the host name and port left to resolve, or `nil` when nothing is left to check
    ///   (every destination allowed, an allowed literal, or a URL that does not parse).
    public func checkLiteral(url: String) throws(WebhookError) -> (host: String, port: Int)? {
        guard !allowPrivate, let target = WebhookTarget(url: url) else { return nil }
        if Self.isLocalhostName(target.host) {
            refusals.increment(labels: [("stage", "creation")])
            throw Self.refusal(
                "url's host \(String(target.host.prefix(64))) is \(WebhookAddressRange.loopback.phrase) by name"
            )
        }
        guard let address = WebhookAddress(literal: target.host) else { return (target.host, target.port) }
        guard let range = address.refusedRange else { return nil }
        refusals.increment(labels: [("stage", "creation")])
        throw Self.refusal("url's host \(String(target.host.prefix(64))) is \(range.phrase)")
    }

    /// `localhost` and every name under it are loopback by definition (RFC 6761, section 6.3):
    /// refused without asking DNS, whose answer for them may be slow or absent.
    static func isLocalhostName(_ host: String) -> Bool {
        var name = host.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        return name == "localhost" || name.hasSuffix(".localhost")
    }

    /// The host's addresses, or none when it does not resolve within ``resolveTimeout``.
    ///
    /// getaddrinfo cannot be interrupted, so the lookup runs in a task of its own that the answer
    /// does not wait for: a task group would wait for it to finish, timeout or not.
    private func lookUp(_ host: String, port: Int) async -> [String] {
        let resolve = self.resolve
        let timeout = resolveTimeout
        let waiting = Waiting()
        return await withCheckedContinuation { continuation in
            waiting.continuation.withLock { $0 = continuation }
            let timer = Task {
                try? await Task.sleep(for: timeout)
                waiting.continuation.withLock { $0.take() }?.resume(returning: [])
            }
            Task {
                let addresses = (try? await resolve(host, port)) ?? []
                timer.cancel()
                waiting.continuation.withLock { $0.take() }?.resume(returning: addresses)
            }
        }
    }

    private static func refusal(_ what: String) -> WebhookError {
        .invalid(
            "destination_not_allowed",
            "\(what): Herald delivers webhooks to public addresses only. Use the receiver's public URL, "
                + "or set HERALD_WEBHOOK_ALLOW_PRIVATE=1 to allow receivers on private networks and this host",
            field: "url"
        )
    }
}

/// The continuation a lookup and its timer race to resume (a class: a `Mutex` cannot be copied
/// into the tasks).
private final class Waiting: Sendable {
    let continuation = Mutex<CheckedContinuation<[String], Never>?>(nil)
}
