public import APNs
public import Foundation
public import HTTPRouting
import HeraldCore

/// A WebPush delivery turned into the APNs push the iOS notification service extension expects
/// (RELAY.md, "The APNs request"), or the answer to give when that is impossible.
public struct RelayedPush: Sendable, Equatable {
    public var request: APNSRequest
    public var environment: APNSEnvironment
    /// `aes128gcm` or `aesgcm`, for metrics labels.
    public var encoding: String
}

/// Why a relay request cannot be relayed: the HTTP status and JSON error to answer with.
public struct RelayRejection: Error, Sendable, Equatable, CustomStringConvertible {
    public var status: Int
    public var code: String
    public var message: String
    /// For metrics: the encoding when it was known.
    public var encoding: String

    public var description: String { "\(status) \(code): \(message)" }

    public var httpError: HTTPError {
        HTTPError(status: status, code: code, message: message)
    }
}

/// The pure part of the relay: WebPush request in, APNs request out. No I/O, no clock of its own.
public struct WebPushTranslation: Sendable {
    /// RFC 8030 forbids 413 for bodies of 4096 bytes or less.
    public static let maxBodySize = 4096
    /// The longest `TTL` honoured, in seconds: 30 days, as long as APNs stores a notification.
    public static let maxTTLSeconds = 30 * 24 * 3_600
    /// Longest `Topic` copied into `apns-collapse-id` (APNs' limit).
    public static let maxCollapseIDBytes = 64

    /// The app's bundle id (`TOPIC`).
    public var topic: String

    public init(topic: String) {
        self.topic = topic
    }

    /// Translates `POST /push/{device_token}/{id}`.
    ///
    /// - Parameters:
    ///   - rawToken: the `device_token` path segment as received.
    ///   - rawID: the `id` path segment as received (percent-encoded).
    ///   - request: the HTTP request (query, headers, body).
    ///   - now: the time `TTL` counts from.
    public func translate(
        rawToken: String,
        rawID: String,
        request: HTTPRequest,
        now: Date
    ) throws(RelayRejection) -> RelayedPush {
        let encoding = try Self.contentEncoding(request.headers)
        func reject(_ status: Int, _ code: String, _ message: String) -> RelayRejection {
            RelayRejection(status: status, code: code, message: message, encoding: encoding)
        }
        let token: String
        do {
            token = try APNSDeviceToken.normalized(rawToken)
        } catch {
            throw reject(
                400,
                "invalid_device_token",
                "the device token must be 64 to 200 hexadecimal characters (an even number)"
            )
        }
        guard let id = rawID.utf8Contains(UInt8(ascii: "%")) ? rawID.removingPercentEncoding : rawID else {
            throw reject(400, "invalid_id", "the subscription id is not valid percent-encoded UTF-8")
        }
        guard request.body.count <= Self.maxBodySize else {
            throw reject(
                413,
                "payload_too_large",
                "the encrypted body is \(request.body.count) bytes; WebPush allows at most \(Self.maxBodySize)"
            )
        }

        var salt: String?
        var dh: String?
        if encoding == "aesgcm" {
            salt = request.headers["Encryption"].flatMap { Self.parameter("salt", in: $0) }
            guard salt != nil else {
                throw reject(400, "missing_salt", "aesgcm needs an Encryption header with a salt parameter")
            }
            dh = request.headers["Crypto-Key"].flatMap { Self.parameter("dh", in: $0) }
            guard dh != nil else {
                throw reject(400, "missing_dh", "aesgcm needs a Crypto-Key header with a dh parameter")
            }
        }
        let body = Self.payload(encoding: encoding, id: id, body: request.body, salt: salt, dh: dh)

        var apns = APNSRequest(deviceToken: token, pushType: .alert, topic: .explicit(topic), payload: body)
        if let ttl = request.headers["TTL"].flatMap({ Int($0.trimmingSpaces()) }), ttl >= 0 {
            // RFC 8030 lets a push service keep a message for less than asked: past APNs' own
            // storage limit the expiration would mean nothing, and far out it would not fit a date.
            let kept = min(ttl, Self.maxTTLSeconds)
            apns.expiration = kept == 0 ? .immediately : .at(now.addingTimeInterval(TimeInterval(kept)))
        }
        if let urgency = request.headers["Urgency"]?.trimmingSpaces() {
            if urgency.equalsIgnoringASCIICase("very-low") || urgency.equalsIgnoringASCIICase("low") {
                apns.priority = .consideringDevicePower
            } else if urgency.equalsIgnoringASCIICase("normal") || urgency.equalsIgnoringASCIICase("high") {
                apns.priority = .immediately
            }
        }
        if let collapse = request.headers["Topic"]?.trimmingSpaces(), !collapse.isEmpty,
            collapse.utf8.count <= Self.maxCollapseIDBytes
        {
            apns.collapseID = collapse
        }
        let sandbox = request.query.last { $0.name == "sandbox" }?.value == "true"
        return RelayedPush(request: apns, environment: sandbox ? .sandbox : .production, encoding: encoding)
    }

    /// `Content-Encoding`, lowercased: `aes128gcm` or `aesgcm`; anything else is 415.
    static func contentEncoding(_ headers: HTTPHeaders) throws(RelayRejection) -> String {
        var given: String?
        if case .one(let value) = headers.single("Content-Encoding") { given = value.trimmingSpaces() }
        let encoding: String? =
            if given?.equalsIgnoringASCIICase("aes128gcm") == true {
                "aes128gcm"
            } else if given?.equalsIgnoringASCIICase("aesgcm") == true {
                "aesgcm"
            } else {
                nil
            }
        guard let encoding else {
            throw RelayRejection(
                status: 415,
                code: "unsupported_encoding",
                message: "Content-Encoding must be exactly one of aes128gcm or aesgcm",
                encoding: "unknown"
            )
        }
        return encoding
    }

    /// The bare value of `name` in a `k=v; k2="v2", …` header (separators `;` or `,`, optional
    /// spaces, optional quotes), or `nil` when absent or empty.
    static func parameter(_ name: String, in header: String) -> String? {
        for item in header.split(whereSeparator: { $0 == ";" || $0 == "," }) {
            let pair = item.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, pair[0].trimmingCharacters(in: .whitespaces).lowercased() == name else { continue }
            var value = pair[1].trimmingCharacters(in: .whitespaces)
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") {
                value = String(value.dropFirst().dropLast())
            }
            return value.isEmpty ? nil : value
        }
        return nil
    }
}
