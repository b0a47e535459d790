/// A parsed `DATABASE_URL`.
///
/// - `sqlite:PATH`, `sqlite://PATH` (so `sqlite:///abs/path` is absolute), `sqlite::memory:`
/// - `postgres://user:password@host:port/database?options` or `postgresql://…`: handed to libpq,
///   which understands every libpq URI parameter (`sslmode`, `connect_timeout`, `options`, …).
///   Herald's own parameter `pool_size` (connections, default 4) is removed before that.
public enum DatabaseURL: Sendable, Equatable {
    case sqlite(path: String)
    case postgres(PostgresURL)

    /// A PostgreSQL URL without Herald's own parameters, plus their values.
    public struct PostgresURL: Sendable, Equatable {
        /// The URL as libpq will see it (may contain the password: never log it; use ``redacted``).
        public var libpqURL: String
        public var poolSize: Int
        /// The URL with the password replaced by `***`, for logs and errors.
        public var redacted: String { DatabaseURL.redact(libpqURL) }
        /// The password as written and decoded, if the URL has one (scrubbed from libpq's messages).
        var secrets: [String]
    }

    /// Default PostgreSQL pool size.
    public static let defaultPoolSize = 4

    /// Parses `url`; the error message never contains the password.
    public init(parsing url: String) throws {
        let trimmed = url.trimmingWhitespace()
        let lower = trimmed.lowercased()
        if lower.hasPrefix("sqlite:") {
            var path = String(trimmed.dropFirst("sqlite:".count))
            if path.hasPrefix("//") { path.removeFirst(2) }
            guard !path.isEmpty else {
                throw DatabaseError(
                    code: .invalidURL,
                    message: "the SQLite URL '\(trimmed)' has no path; use sqlite:herald.sqlite or sqlite::memory:"
                )
            }
            self = .sqlite(path: path)
        } else if lower.hasPrefix("postgres://") || lower.hasPrefix("postgresql://") {
            self = .postgres(try Self.parsePostgres(trimmed))
        } else {
            throw DatabaseError(
                code: .invalidURL,
                message: "DATABASE_URL '\(Self.redact(trimmed))' is neither sqlite:PATH nor postgres://user@host/db"
            )
        }
    }

    private static func parsePostgres(_ url: String) throws -> PostgresURL {
        var base = url
        var kept: [Substring] = []
        var poolSize = defaultPoolSize
        var secrets: [String] = []
        if let question = url.firstIndex(of: "?") {
            base = String(url[..<question])
            for item in url[url.index(after: question)...].split(separator: "&") {
                let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                if parts[0] == "pool_size" {
                    guard parts.count == 2, let size = Int(parts[1]), (1...100).contains(size) else {
                        throw DatabaseError(
                            code: .invalidURL,
                            message: "pool_size in DATABASE_URL must be a whole number from 1 to 100"
                        )
                    }
                    poolSize = size
                } else {
                    if parts[0] == "password", parts.count == 2 {
                        secrets += [String(parts[1]), percentDecoded(parts[1])]
                    }
                    kept.append(item)
                }
            }
        }
        if let userInfo = userInfo(of: base), let colon = userInfo.firstIndex(of: ":") {
            let raw = userInfo[userInfo.index(after: colon)...]
            secrets += [String(raw), percentDecoded(raw)]
        }
        let libpqURL = kept.isEmpty ? base : base + "?" + kept.joined(separator: "&")
        return PostgresURL(libpqURL: libpqURL, poolSize: poolSize, secrets: secrets.filter { !$0.isEmpty })
    }

    /// The part between `://` and the last `@` before the path, if any.
    private static func userInfo(of url: String) -> Substring? {
        guard let scheme = url.firstRange(of: "://") else { return nil }
        let rest = url[scheme.upperBound...]
        let authority = rest[..<(rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex)]
        guard let at = authority.lastIndex(of: "@") else { return nil }
        return authority[..<at]
    }

    /// `url` with any password (in the user info or a `password=` parameter) replaced by `***`.
    public static func redact(_ url: String) -> String {
        var result = url
        if let userInfo = userInfo(of: result), let colon = userInfo.firstIndex(of: ":") {
            result.replaceSubrange(result.index(after: colon)..<userInfo.endIndex, with: "***")
        }
        guard let question = result.firstIndex(of: "?") else { return result }
        let query = result[result.index(after: question)...].split(separator: "&", omittingEmptySubsequences: false)
            .map { item -> String in
                item.lowercased().hasPrefix("password=") ? "password=***" : String(item)
            }
        return String(result[...question]) + query.joined(separator: "&")
    }

    private static func percentDecoded(_ text: Substring) -> String {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%"), let high = iterator.next(), let low = iterator.next(),
                let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)
            {
                bytes.append(value)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Replaces every occurrence of each secret in `text` with `***` (libpq messages, just in case).
    static func scrub(_ text: String, secrets: [String]) -> String {
        secrets.reduce(text) { text, secret in secret.isEmpty ? text : text.replacing(secret, with: "***") }
    }
}

extension String {
    fileprivate func trimmingWhitespace() -> String {
        let characters = drop { $0.isWhitespace }
        return String(characters.reversed().drop { $0.isWhitespace }.reversed())
    }
}
