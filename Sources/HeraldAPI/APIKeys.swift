import Foundation
public import HTTPRouting
public import HeraldCore
import HeraldCrypto

/// The keys `/v1` accepts (`HERALD_API_KEYS`), checked in constant time.
///
/// Every request to `/v1` needs `Authorization: Bearer <key>`. The key is compared with every
/// configured key over the full length of both, so the time taken does not reveal how much of a
/// guess was right, nor which key matched. Keys never appear in logs, errors or ``description``.
public struct APIKeys: Sendable, CustomStringConvertible {
    private let keys: [[UInt8]]

    /// The bounds on one key's length, in characters.
    public static let allowedLengths = EnvironmentReader.keyLengths

    public init(_ keys: [String]) {
        self.keys = keys.map { Array($0.utf8) }
    }

    /// SHA-256 of each key: what the admin console compares a sign-in's key and its sessions with.
    public var sha256Digests: [[UInt8]] {
        keys.map { SHA256.hash($0) }
    }

    /// Whether no key is configured (`/v1` then refuses everything).
    public var isEmpty: Bool { keys.isEmpty }

    public var count: Int { keys.count }

    /// Reads `HERALD_API_KEYS`: comma-separated, surrounding spaces ignored, empty entries dropped.
    ///
    /// - Throws: ``HeraldCore/ConfigurationError`` naming the position of a key that is too short,
    ///   too long or holds spaces or control characters (never the key itself).
    public static func load(environment: [String: String]) throws(ConfigurationError) -> APIKeys {
        var reader = EnvironmentReader(environment)
        let keys = reader.keys(.apiKeys)
        try reader.validate()
        return APIKeys(keys)
    }

    /// Checks the request's bearer key.
    ///
    /// - Throws: ``HTTPServer/HTTPError`` 401 saying what is missing or wrong.
    public func authorize(_ request: HTTPRequest) throws(HTTPError) {
        guard !keys.isEmpty else {
            throw Self.unauthorized(
                "api_keys_unset",
                "HERALD_API_KEYS is unset, so /v1 accepts no request: set it to one or more comma-separated keys, "
                    + "restart, and send Authorization: Bearer <key>"
            )
        }
        guard request.headers["Authorization"] != nil else {
            throw Self.unauthorized("missing_api_key", "send the API key as Authorization: Bearer <key>")
        }
        guard let bearer = Self.bearer(in: request) else {
            throw Self.unauthorized(
                "missing_api_key",
                "the Authorization header is not a bearer key: send Authorization: Bearer <key>"
            )
        }
        let presented = Array(bearer.utf8)
        var matched = false
        for key in keys {
            // No early exit: each comparison costs the same whatever matched.
            matched = ConstantTime.equal(presented, key) || matched
        }
        guard matched else {
            throw Self.unauthorized("invalid_api_key", "the API key is not one of HERALD_API_KEYS: check the key sent")
        }
    }

    /// The key after `Bearer ` in the Authorization header, if there is one.
    static func bearer(in request: HTTPRequest) -> String? {
        guard let header = request.headers["Authorization"] else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        return String(parts[1]).trimmingSpaces()
    }

    /// The presented key of a request ``authorize(_:)`` accepted (empty if it had none), for
    /// scoping what a key owns; hash it before storing it.
    public static func bearerKey(in request: HTTPRequest) -> String {
        bearer(in: request) ?? ""
    }

    /// ``authorize(_:)`` as a router admission check (``HTTPServer/Router/admit(under:_:)``): the
    /// 401 is sent on the headers alone, before the server reads a body.
    public var admission: Router.AdmissionCheck {
        { request in
            do throws(HTTPError) {
                try authorize(request)
                return nil
            } catch {
                return error.response
            }
        }
    }

    private static func unauthorized(_ code: String, _ message: String) -> HTTPError {
        HTTPError(status: 401, code: code, message: message, headers: ["WWW-Authenticate": "Bearer"])
    }

    public var description: String { "APIKeys(\(keys.count) configured)" }
}
