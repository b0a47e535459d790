public import APNs
import Foundation

/// ``APNSConnectionPool`` could not hand the request to APNs: no connection could be opened (and
/// the pool waits before trying again), or the pool is shut down. Nothing was sent.
///
/// ``isSafeToRetry`` is `true` for ``Code/unreachable`` (the client's retry policy may try again
/// after its backoff) and `false` for ``Code/shutDown`` (this pool will take nothing more, so
/// retrying through it only delays the caller; the request is still unsent and may go elsewhere).
///
/// ``description`` reads like `APNs unreachable: cannot connect to api.push.apple.com: connection
/// refused; retrying in 1.6s`. It never contains tokens or keys.
public struct APNSConnectionPoolError: Error, Sendable, CustomStringConvertible, APNSRetryableError {
    /// What went wrong; compare with the static members.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private let name: String

        private init(_ name: String) {
            self.name = name
        }

        /// Connecting failed; the pool waits ``APNSConnectionPoolError/retryAfter`` before the
        /// next attempt and fails sends at once meanwhile.
        public static let unreachable = Code("unreachable")
        /// ``APNSConnectionPool/shutdown()`` was called.
        public static let shutDown = Code("shut_down")

        public var description: String { name }
    }

    public let code: Code
    /// The host and port the pool connects to.
    public let endpoint: APNSEndpoint
    /// Why, in a sentence (for ``Code/unreachable``, the last connection error).
    public let reason: String
    /// How long until the pool tries to connect again; `nil` when it will try on the next send.
    public let retryAfter: Duration?
    /// The last connection error (an ``HTTP2/HTTP2Error`` with the TLS or socket error inside),
    /// when there is one.
    public let underlying: (any Error)?

    public init(
        code: Code,
        endpoint: APNSEndpoint,
        reason: String,
        retryAfter: Duration? = nil,
        underlying: (any Error)? = nil
    ) {
        self.code = code
        self.endpoint = endpoint
        self.reason = reason
        self.retryAfter = retryAfter
        self.underlying = underlying
    }

    /// `true` when the pool is unreachable; `false` once it is shut down.
    public var isSafeToRetry: Bool { code != .shutDown }

    public var description: String {
        if code == .shutDown {
            return "APNs connection pool for \(endpoint) is shut down: \(reason)"
        }
        guard let retryAfter, retryAfter > .zero else {
            return "APNs unreachable: \(reason); retrying on the next request"
        }
        let (seconds, attoseconds) = retryAfter.components
        let value = Double(seconds) + Double(attoseconds) / 1e18
        return "APNs unreachable: \(reason); retrying in \(String(format: "%.1f", max(value, 0.1)))s"
    }
}
