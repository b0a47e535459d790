import ClientTokens
public import Foundation
import HeraldCrypto

/// Target `client-token`: the client-token verifier (`/v1/client`'s authentication).
///
/// Input: a first byte choosing what the rest is, then the rest:
/// - `t`: a whole token, verified as it comes from a request;
/// - `p`: a payload, signed with the harness's HS256 secret and verified, so that mutations reach
///   the claim checks behind the signature;
/// - `h`: a header and a payload separated by a newline, signed with the harness's ES256 key
///   (kid `fuzz`), so that mutations reach the header's parsing and the key selection.
public enum ClientTokenFuzz {
    static let secret = Array("fuzz-secret-0123456789abcdef0123456789".utf8)
    /// A fixed P-256 scalar, so the corpus's ES256 tokens stay valid across runs.
    static let key: P256PrivateKey? = try? P256PrivateKey(rawRepresentation: Array(repeating: 0x11, count: 32))
    static let verifier = ClientTokenVerifier(
        ClientTokenConfiguration(secret: secret, publicKeys: key.map { ["fuzz": $0.publicKey] } ?? [:])
    )
    /// The moment the harness verifies at: 2030-03-17T17:46:40Z.
    public static let now = Date(timeIntervalSince1970: 1_900_000_000)

    public static func run(_ data: [UInt8]) {
        _ = subject(data)
    }

    /// The verified token's `sub`, or `nil` when it is refused (the replay test checks the seeds).
    public static func subject(_ data: [UInt8]) -> String? {
        guard let mode = data.first else { return nil }
        let rest = Array(data.dropFirst())
        let token: String
        switch mode {
        case UInt8(ascii: "p"):
            guard let signed = try? ClientTokenSigner.hs256(secret: secret).token(payload: rest) else { return nil }
            token = signed
        case UInt8(ascii: "h"):
            guard let key, let newline = rest.firstIndex(of: UInt8(ascii: "\n")) else { return nil }
            let signer = ClientTokenSigner.es256(key, keyID: "fuzz")
            guard
                let signed = try? signer.token(header: Array(rest[..<newline]), payload: Array(rest[(newline + 1)...]))
            else { return nil }
            token = signed
        default:
            token = String(decoding: rest, as: UTF8.self)
        }
        do throws(ClientTokenError) {
            let claims = try verifier.verify(token, now: now)
            _ = try? claims.permits(app: "com.example.fuzz")
            return claims.subject
        } catch {
            _ = error.message
            return nil
        }
    }
}
