import HeraldCore

/// Target `rate-limit`: the parser of rate-limit values (HERALD_CLIENT_RATE_LIMIT and the
/// others), and the buckets of an accepted value. Input: the value's bytes.
public enum RateLimitFuzz {
    public static func run(_ data: [UInt8]) {
        _ = limit(data)
    }

    /// The accepted value as written back (`off` for none), `nil` when refused. An accepted
    /// value reads back the same, and its buckets answer without a trap, Retry-After at least 1.
    public static func limit(_ data: [UInt8]) -> String? {
        let text = String(decoding: data, as: UTF8.self)
        let parsed: RateLimit?
        do {
            parsed = try RateLimit.parse(text)
        } catch {
            _ = error.description
            return nil
        }
        guard let parsed else { return "off" }
        precondition((try? RateLimit.parse(parsed.description)) == parsed, "a value that does not read back")
        var buckets = TokenBuckets<UInt8>(limit: parsed, maximumKeys: 4)
        for (index, byte) in data.prefix(64).enumerated() {
            if case .refused(let seconds) = buckets.take(byte % 8, at: Double(index) * 0.25), seconds < 1 {
                preconditionFailure("Retry-After below 1")
            }
        }
        return parsed.description
    }
}
