import ClientTokens
import Foundation
import HeraldCore
import HeraldCrypto

/// `herald client-token`: mints one client token, for trying `/v1/client` and for tests. An app's
/// own backend mints them in production (README: "Client tokens").
enum ClientTokenCommand {
    static let spec = CommandSpec(
        name: "herald client-token",
        summary: "Print a client token for a user: HS256 with HERALD_CLIENT_TOKEN_SECRET, or ES256 with a private key "
            + "whose public half HERALD_CLIENT_TOKEN_KEYS_FILE lists.",
        usage: "herald client-token --user ID [--ttl 1h] [--app BUNDLE] [--private-key-file PEM --kid KID]",
        options: [
            .init("user", value: "ID", help: "The user id (the sub claim)."),
            .init(
                "ttl",
                value: "T",
                help: "How long it lives: seconds, or a number with s, m, h or d (default 1h, "
                    + "at most 30d)."
            ),
            .init("app", value: "BUNDLE", help: "Limit the token to this app's bundle id (the app claim)."),
            .init("private-key-file", value: "PEM", help: "Sign with ES256 and this P-256 private key (PEM)."),
            .init("kid", value: "KID", help: "With --private-key-file: the kid of its public key in the keys file."),
        ]
    )

    static func run(_ arguments: [String]) -> Int32 {
        do throws(UsageError) {
            let parsed = try spec.parse(arguments)
            if parsed.wantsHelp {
                print(spec.help, terminator: "")
                return 0
            }
            if let extra = parsed.positionals.first {
                throw UsageError("unexpected argument '\(extra)'; see 'herald client-token --help'")
            }
            print(try mint(parsed, environment: ProcessInfo.processInfo.environment, now: Date()))
            return 0
        } catch {
            printError("herald client-token: \(error.message)")
            return 2
        }
    }

    /// The token `parsed` asks for, checked with the verifier `herald serve` would build from the
    /// same environment: a kid the keys file does not list, or a private key that is not its
    /// pair, is an error here rather than a 401 later.
    static func mint(_ parsed: ParsedArguments, environment: [String: String], now: Date) throws(UsageError) -> String {
        guard let user = parsed.value("user") else { throw UsageError("--user ID is required (the token's sub)") }
        let ttl = try ttl(parsed.value("ttl") ?? "1h")
        let configuration: ClientTokenConfiguration
        do {
            configuration = try ClientTokenConfiguration.load(environment: environment)
        } catch {
            throw UsageError(error.problems.joined(separator: "; "))
        }
        let signer: ClientTokenSigner
        if let path = parsed.value("private-key-file") {
            guard let kid = parsed.value("kid") else {
                throw UsageError("--private-key-file needs --kid KID: the kid of its public key in the keys file")
            }
            let key: P256PrivateKey
            do {
                key = try P256PrivateKey(pemRepresentation: String(contentsOfFile: path, encoding: .utf8))
            } catch {
                throw UsageError("--private-key-file \(path) is not a readable P-256 private key in PEM: \(error)")
            }
            signer = .es256(key, keyID: kid)
        } else if let secret = configuration.secret {
            signer = .hs256(secret: secret)
        } else if !configuration.publicKeys.isEmpty {
            throw UsageError(
                "HERALD_CLIENT_TOKEN_KEYS_FILE holds only public keys: pass --private-key-file PEM --kid KID to sign "
                    + "with ES256, or set HERALD_CLIENT_TOKEN_SECRET for HS256"
            )
        } else {
            throw UsageError(
                "client tokens are not configured: set HERALD_CLIENT_TOKEN_SECRET (e.g. `openssl rand -hex 32`), or "
                    + "pass --private-key-file PEM --kid KID"
            )
        }
        let issuedAt = Date(timeIntervalSince1970: now.timeIntervalSince1970.rounded(.down))
        let claims = ClientTokenClaims(
            subject: user,
            app: parsed.value("app"),
            audiences: [configuration.audience],
            issuedAt: issuedAt,
            expiresAt: issuedAt.addingTimeInterval(ttl)
        )
        let token: String
        do {
            token = try signer.token(for: claims)
        } catch {
            throw UsageError("the token could not be signed: \(error)")
        }
        do throws(ClientTokenError) {
            _ = try ClientTokenVerifier(configuration).verify(token, now: issuedAt)
        } catch {
            throw UsageError("Herald would refuse this token (\(error.reason)): \(error.message)")
        }
        return token
    }

    /// `3600`, `90s`, `15m`, `1h` or `7d`, from 1 second to 30 days.
    static func ttl(_ text: String) throws(UsageError) -> TimeInterval {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3_600, "d": 86_400]
        var digits = Substring(text)
        var unit = 1.0
        if let last = text.last, let scale = units[last] {
            unit = scale
            digits = digits.dropLast()
        }
        guard !digits.isEmpty, digits.allSatisfy(\.isASCII), let count = Int(digits), count > 0,
            Double(count) * unit <= ClientTokenLimits.maximumLifetime
        else {
            throw UsageError("--ttl \(text) is not valid: use seconds or a number with s, m, h or d, at most 30d")
        }
        return Double(count) * unit
    }
}
