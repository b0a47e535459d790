public import Foundation
import HeraldCore
import HeraldCrypto

/// Verifies client tokens: compact JWS (RFC 7515) JWTs (RFC 7519) signed with HS256 under
/// HERALD_CLIENT_TOKEN_SECRET or ES256 under a key of HERALD_CLIENT_TOKEN_KEYS_FILE.
///
/// Pure: it reads no clock and no file, so every boundary can be tested with a chosen `now`, and no
/// input can crash it. The signature is checked before any claim is read.
///
/// ```swift
/// let verifier = ClientTokenVerifier(configuration)
/// let claims = try verifier.verify(token, now: Date())
/// print(claims.subject)
/// ```
public struct ClientTokenVerifier: Sendable, CustomStringConvertible {
    public let configuration: ClientTokenConfiguration

    public init(_ configuration: ClientTokenConfiguration) {
        self.configuration = configuration
    }

    /// The header fields Herald reads; others (`typ`, `cty`) are ignored.
    struct Header {
        var alg: String?
        var kid: String?
        var crit: [String]?

        init(_ members: JSONMembers) throws(ClientTokenError) {
            alg = try members.string("alg")
            kid = try members.string("kid")
            crit = try members.strings("crit")
        }
    }

    /// Checks `token`'s form, algorithm, key and signature, then its claims at `now`.
    ///
    /// - Throws: ``ClientTokenError`` with the first reason found.
    public func verify(_ token: String, now: Date) throws(ClientTokenError) -> ClientTokenClaims {
        guard configuration.isConfigured else {
            throw ClientTokenError(
                .notConfigured,
                "client tokens are not configured on this server: set HERALD_CLIENT_TOKEN_SECRET (HS256) or "
                    + "HERALD_CLIENT_TOKEN_KEYS_FILE (ES256) and restart"
            )
        }
        let bytes = Array(token.utf8)
        guard !bytes.isEmpty else {
            throw ClientTokenError(.missing, "send the client token as Authorization: Bearer <token>")
        }
        guard bytes.count <= ClientTokenLimits.maximumTokenBytes else {
            throw Self.malformed("the token is longer than \(ClientTokenLimits.maximumTokenBytes) bytes")
        }
        let dots = bytes.indices.filter { bytes[$0] == UInt8(ascii: ".") }
        guard dots.count == 2 else {
            throw Self.malformed("a client token is three base64url parts separated by two dots (a compact JWS)")
        }
        let headerText = bytes[..<dots[0]]
        let payloadText = bytes[(dots[0] + 1)..<dots[1]]
        let signatureText = bytes[(dots[1] + 1)...]
        let header = try Header(Self.jsonObject(Self.decodePart(headerText, "header"), "header"))
        let signature = try Self.decodePart(signatureText, "signature")
        let kid = try checkSignature(signature, of: Array(bytes[..<dots[1]]), header: header)
        var claims = try Self.claims(
            from: Self.decodePart(payloadText, "payload"),
            audience: configuration.audience,
            now: now
        )
        try checkApp(&claims, signedWith: kid)
        return claims
    }

    /// Holds the `app` claim to the apps the signing kid is bound to, and requires one when the
    /// server serves several apps. A token of a kid bound to one app, without an `app` claim, is
    /// limited to that app; bound to several, it must name one.
    private func checkApp(_ claims: inout ClientTokenClaims, signedWith kid: String?) throws(ClientTokenError) {
        if let kid, let bound = configuration.keyApps[kid] {
            if let app = claims.app {
                guard bound.contains(app) else {
                    throw ClientTokenError(
                        .appNotAllowedForKey,
                        "the key \(Self.quoted(kid)) may not sign tokens for the app \(app): HERALD_CLIENT_TOKEN_KEYS_FILE "
                            + "binds it to \(bound.joined(separator: ", ")); sign with a key bound to \(app)"
                    )
                }
            } else if bound.count == 1 {
                claims.app = bound[0]
            } else {
                throw ClientTokenError(
                    .appClaimRequired,
                    "the token has no app claim and its key \(Self.quoted(kid)) signs for several apps: add an app "
                        + "claim naming one of \(bound.joined(separator: ", "))"
                )
            }
        }
        if configuration.requiresAppClaim, claims.app == nil {
            throw ClientTokenError(
                .appClaimRequired,
                "this server serves several apps: add an app claim (the bundle id) to the client token"
            )
        }
    }

    /// Selects the key by `alg` (and `kid`) and checks the signature over `signingInput`.
    /// - Returns: the kid of the ES256 key that verified it; `nil` for HS256.
    private func checkSignature(
        _ signature: [UInt8],
        of signingInput: [UInt8],
        header: Header
    ) throws(ClientTokenError) -> String? {
        if header.crit != nil {
            throw Self.malformed("the header's crit names extensions this server does not implement: remove crit")
        }
        guard let alg = header.alg else { throw Self.malformed("the header has no alg: use HS256 or ES256") }
        switch alg {
        case "HS256":
            guard let secret = configuration.secret else {
                throw ClientTokenError(
                    .unsupportedAlgorithm,
                    "HS256 tokens are not accepted: HERALD_CLIENT_TOKEN_SECRET is unset; sign with ES256 and a kid "
                        + "of HERALD_CLIENT_TOKEN_KEYS_FILE"
                )
            }
            guard HMAC256.isValidAuthenticationCode(signature, for: signingInput, key: secret) else {
                throw Self.badSignature("HS256", "HERALD_CLIENT_TOKEN_SECRET")
            }
            return nil
        case "ES256":
            guard !configuration.publicKeys.isEmpty else {
                throw ClientTokenError(
                    .unsupportedAlgorithm,
                    "ES256 tokens are not accepted: HERALD_CLIENT_TOKEN_KEYS_FILE is unset; sign with HS256 and "
                        + "HERALD_CLIENT_TOKEN_SECRET"
                )
            }
            guard let kid = header.kid else {
                throw ClientTokenError(
                    .unknownKey,
                    "the ES256 token has no kid header: name the key of HERALD_CLIENT_TOKEN_KEYS_FILE it was signed with"
                )
            }
            guard let key = configuration.publicKeys[kid] else {
                throw ClientTokenError(
                    .unknownKey,
                    "no key of HERALD_CLIENT_TOKEN_KEYS_FILE has the kid \(Self.quoted(kid)): add its public key "
                        + "to the file, or sign with a kid it holds"
                )
            }
            guard let parsed = try? ECDSASignature(rawRepresentation: signature),
                key.isValidSignature(parsed, for: signingInput)
            else {
                throw Self.badSignature("ES256", "the public key of kid \(Self.quoted(kid))")
            }
            return kid
        default:
            throw ClientTokenError(
                .unsupportedAlgorithm,
                "the algorithm \(Self.quoted(alg)) is not accepted: sign client tokens with HS256 or ES256"
            )
        }
    }

    // MARK: Parts

    /// Decodes one base64url part (unpadded, as JWS requires).
    static func decodePart(_ text: ArraySlice<UInt8>, _ name: String) throws(ClientTokenError) -> [UInt8] {
        guard !text.isEmpty || name == "signature" else { throw malformed("the \(name) part is empty") }
        let valid = text.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                true
            default:
                false
            }
        }
        let encoded = String(decoding: text, as: UTF8.self)
        // Only the canonical encoding: unused trailing bits set would give one signature several spellings.
        guard valid, let decoded = Base64URL.decode(encoded), Base64URL.encode(decoded) == encoded else {
            throw malformed("the \(name) part is not unpadded base64url")
        }
        return decoded
    }

    /// Reads a header or payload: one strict JSON object (no duplicate keys: two readers could
    /// otherwise disagree on which value counts), read by the one JSON grammar.
    static func jsonObject(_ bytes: [UInt8], _ name: String) throws(ClientTokenError) -> JSONMembers {
        let value: JSONValue
        do {
            value = try JSONValue.parse(bytes, maximumDepth: 4)
        } catch {
            throw malformed("the \(name) is not strict JSON: \(error.message)")
        }
        guard case .object(let members) = value else { throw malformed("the \(name) is not a JSON object") }
        return JSONMembers(members: members, name: name)
    }

    /// The members of a token's header or payload, read by type; `null` reads as absent.
    struct JSONMembers {
        var members: [String: JSONValue]
        /// `header` or `payload`, for messages.
        var name: String

        func string(_ key: String) throws(ClientTokenError) -> String? {
            switch members[key] {
            case nil, .null: return nil
            case .string(let value): return value
            default: throw wrongType(key)
            }
        }

        /// A JSON number, whole or not.
        func number(_ key: String) throws(ClientTokenError) -> Double? {
            switch members[key] {
            case nil, .null: return nil
            case .integer(let value): return Double(value)
            case .double(let value): return value
            default: throw wrongType(key)
            }
        }

        func strings(_ key: String) throws(ClientTokenError) -> [String]? {
            switch members[key] {
            case nil, .null: return nil
            case .array(let items):
                var strings: [String] = []
                for item in items {
                    guard case .string(let value) = item else { throw wrongType(key) }
                    strings.append(value)
                }
                return strings
            default: throw wrongType(key)
            }
        }

        /// A string or an array of strings (`aud`, RFC 7519 §4.1.3).
        func oneOrMoreStrings(_ key: String) throws(ClientTokenError) -> [String]? {
            if case .string(let value) = members[key] { return [value] }
            return try strings(key)
        }

        private func wrongType(_ key: String) -> ClientTokenError {
            let expected =
                switch key {
                case "exp", "iat", "nbf": "a NumericDate (seconds since 1970)"
                case "aud": "a string or an array of strings"
                case "crit": "an array of strings"
                default: "a string"
                }
            let reason: ClientTokenError.Reason = name == "payload" ? .invalidClaim : .malformed
            return ClientTokenError(reason, "the \(name) field \(key) must be \(expected)")
        }
    }

    // MARK: Messages

    static func malformed(_ problem: String) -> ClientTokenError {
        ClientTokenError(.malformed, "the client token is malformed: \(problem)")
    }

    private static func badSignature(_ alg: String, _ key: String) -> ClientTokenError {
        ClientTokenError(
            .badSignature,
            "the \(alg) signature does not verify with \(key): mint the token with the same key Herald is configured with"
        )
    }

    /// A header value for a message: short, printable ASCII only, so a crafted value cannot forge
    /// log lines or grow an error.
    static func quoted(_ text: String) -> String {
        let printable = text.unicodeScalars.prefix(40).map { $0.value >= 0x20 && $0.value < 0x7F ? Character($0) : "?" }
        return "\"" + String(printable) + (text.unicodeScalars.count > 40 ? "…" : "") + "\""
    }

    /// Whether `kid` can name a key: 1 to ``ClientTokenLimits/maximumKeyIDBytes`` printable ASCII.
    static func isAcceptableKeyID(_ kid: String) -> Bool {
        (1...ClientTokenLimits.maximumKeyIDBytes).contains(kid.utf8.count)
            && kid.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F }
    }

    public var description: String { "ClientTokenVerifier(\(configuration))" }
}
