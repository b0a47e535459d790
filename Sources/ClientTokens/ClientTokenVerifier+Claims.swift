import Foundation
import HeraldCore

extension ClientTokenVerifier {
    /// The claims Herald reads; others (`iss`, `jti`, …) are ignored.
    struct Payload {
        var sub: String?
        var exp: Double?
        var iat: Double?
        var nbf: Double?
        /// One string or an array of strings (RFC 7519 §4.1.3).
        var aud: [String]?
        var app: String?

        init(_ members: JSONMembers) throws(ClientTokenError) {
            sub = try members.string("sub")
            exp = try members.number("exp")
            iat = try members.number("iat")
            nbf = try members.number("nbf")
            aud = try members.oneOrMoreStrings("aud")
            app = try members.string("app")
        }
    }

    /// NumericDates outside 1970…5138 are refused before any arithmetic with them.
    private static let numericDates: ClosedRange<Double> = 0...100_000_000_000

    /// Reads and checks the claims of a token whose signature verified.
    static func claims(
        from bytes: [UInt8],
        audience expected: String,
        now: Date
    ) throws(ClientTokenError)
        -> ClientTokenClaims
    {
        let payload = try Payload(jsonObject(bytes, "payload"))
        guard let subject = payload.sub else { throw missingClaim("sub", "the user id") }
        guard let exp = payload.exp else { throw missingClaim("exp", "when the token expires") }
        guard let iat = payload.iat else { throw missingClaim("iat", "when the token was issued") }
        guard let aud = payload.aud else { throw missingClaim("aud", "\"\(expected)\"") }
        guard !subject.isEmpty, subject.utf8.count <= ClientTokenLimits.maximumSubjectBytes,
            !subject.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else {
            throw ClientTokenError(
                .invalidClaim,
                "sub must be a user id of 1 to \(ClientTokenLimits.maximumSubjectBytes) bytes without control characters"
            )
        }
        for (name, value) in [("exp", exp), ("iat", iat), ("nbf", payload.nbf)] {
            if let value, !numericDates.contains(value) {
                throw ClientTokenError(.invalidClaim, "\(name) must be seconds since 1970 (a NumericDate)")
            }
        }
        let audiences = aud
        guard audiences.count <= ClientTokenLimits.maximumAudiences else {
            throw ClientTokenError(.invalidClaim, "aud holds more than \(ClientTokenLimits.maximumAudiences) audiences")
        }
        guard audiences.contains(expected) else {
            throw ClientTokenError(
                .wrongAudience,
                "the token's aud does not name this server: set aud to \"\(expected)\" (HERALD_CLIENT_TOKEN_AUDIENCE)"
            )
        }
        if let app = payload.app, !isBundleID(app) {
            throw ClientTokenError(
                .invalidClaim,
                "app must be a bundle id of 1 to \(ClientTokenLimits.maximumAppBytes) letters, digits, '.', '-' and '_'"
            )
        }
        guard exp > iat else { throw ClientTokenError(.invalidClaim, "exp must lie after iat") }
        guard exp - iat <= ClientTokenLimits.maximumLifetime else {
            throw ClientTokenError(
                .lifetimeTooLong,
                "exp lies more than 30 days after iat: mint tokens that live at most 30 days (hours are usual)"
            )
        }
        let seconds = now.timeIntervalSince1970
        let skew = ClientTokenLimits.clockSkew
        guard seconds < exp + skew else {
            throw ClientTokenError(
                .expired,
                "the token expired at \(time(exp)) (now \(time(seconds)), 60 s of clock skew allowed): "
                    + "ask the app's backend for a new one"
            )
        }
        for (name, value) in [("nbf", payload.nbf), ("iat", iat)] {
            if let value, seconds < value - skew {
                throw ClientTokenError(
                    .notYetValid,
                    "the token's \(name) is \(time(value)), after now (\(time(seconds))) by more than 60 s: "
                        + "check the clock of the backend that minted it"
                )
            }
        }
        return ClientTokenClaims(
            subject: subject,
            app: payload.app,
            audiences: audiences,
            issuedAt: Date(timeIntervalSince1970: iat),
            expiresAt: Date(timeIntervalSince1970: exp),
            notBefore: payload.nbf.map { Date(timeIntervalSince1970: $0) }
        )
    }

    private static func missingClaim(_ name: String, _ meaning: String) -> ClientTokenError {
        ClientTokenError(.missingClaim, "the token has no \(name) claim: add \(name) (\(meaning))")
    }

    private static func time(_ seconds: Double) -> String {
        RFC3339.string(from: Date(timeIntervalSince1970: seconds))
    }

    /// A bundle id: letters, digits, `.`, `-` and `_`.
    static func isBundleID(_ text: String) -> Bool {
        (1...ClientTokenLimits.maximumAppBytes).contains(text.utf8.count)
            && text.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "-"), UInt8(ascii: "_"):
                    true
                default:
                    false
                }
            }
    }
}
