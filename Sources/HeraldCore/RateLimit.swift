/// A token bucket's limit: `rate` requests per `period` on average, in bursts of at most `burst`.
///
/// Written `N/s,B`, `N/m,B` or `N/h,B` (N requests a second, minute or hour; bursts of B; `,B`
/// may be left out, then B is N), or `off` for no limit (``parse(_:)``). Settings such as
/// HERALD_CLIENT_RATE_LIMIT take this form.
public struct RateLimit: Sendable, Hashable, CustomStringConvertible {
    /// Requests per ``period``.
    public let rate: Int
    /// The period ``rate`` counts over, in seconds: 1, 60 or 3,600.
    public let period: Int
    /// The most requests let through at once after a quiet time: the bucket's size.
    public let burst: Int

    /// The largest N and B accepted.
    public static let maximumValue = 1_000_000

    public init(rate: Int, period: Int = 1, burst: Int) {
        precondition(rate > 0 && period > 0 && burst > 0, "a rate limit needs a positive rate, period and burst")
        self.rate = rate
        self.period = period
        self.burst = burst
    }

    /// Tokens added to a bucket per second.
    public var tokensPerSecond: Double { Double(rate) / Double(period) }

    /// How this limit is written: `10/s,60`.
    public var description: String {
        let unit =
            switch period {
            case 60: "m"
            case 3_600: "h"
            default: "s"
            }
        return "\(rate)/\(unit),\(burst)"
    }

    /// What a rate-limit setting accepts, for messages and the configuration reference.
    public static let grammar =
        "N/s,B (N requests a second on average, bursts of up to B; /m and /h count per minute and hour; "
        + "without ,B bursts are N), or off"

    /// Parses `N/s,B`, `N/m,B`, `N/h,B` (`,B` optional) or `off`: `nil` for `off`.
    ///
    /// - Throws: ``RateLimitSyntaxError`` saying what is wrong and what to write instead.
    public static func parse(_ text: String) throws(RateLimitSyntaxError) -> RateLimit? {
        let bytes = Array(text.utf8)
        guard bytes.count <= 64 else { throw RateLimitSyntaxError("it is longer than 64 characters") }
        var trimmed = bytes[...]
        while let first = trimmed.first, first == 0x20 || first == 0x09 { trimmed.removeFirst() }
        while let last = trimmed.last, last == 0x20 || last == 0x09 { trimmed.removeLast() }
        if trimmed.elementsEqual("off".utf8) { return nil }
        guard let slash = trimmed.firstIndex(of: UInt8(ascii: "/")) else {
            throw RateLimitSyntaxError("it has no /s, /m or /h after the number of requests")
        }
        let rate = try number(trimmed[..<slash], "the number of requests before the /")
        let afterSlash = trimmed[(slash + 1)...]
        let comma = afterSlash.firstIndex(of: UInt8(ascii: ","))
        let unit = afterSlash[..<(comma ?? afterSlash.endIndex)]
        let period: Int
        switch Array(unit) {
        case [UInt8(ascii: "s")]: period = 1
        case [UInt8(ascii: "m")]: period = 60
        case [UInt8(ascii: "h")]: period = 3_600
        default: throw RateLimitSyntaxError("the unit after the / must be s, m or h")
        }
        var burst = rate
        if let comma { burst = try number(afterSlash[(comma + 1)...], "the burst after the comma") }
        return RateLimit(rate: rate, period: period, burst: burst)
    }

    /// A whole number from 1 to ``maximumValue``, digits only.
    private static func number(_ digits: ArraySlice<UInt8>, _ name: String) throws(RateLimitSyntaxError) -> Int {
        guard !digits.isEmpty, digits.count <= 7, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            throw RateLimitSyntaxError("\(name) must be a whole number from 1 to \(maximumValue)")
        }
        let value = digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }
        guard (1...maximumValue).contains(value) else {
            throw RateLimitSyntaxError("\(name) must be a whole number from 1 to \(maximumValue)")
        }
        return value
    }
}

/// Why a rate limit could not be read: a phrase to put after the setting's name.
public struct RateLimitSyntaxError: Error, Sendable, Hashable, CustomStringConvertible {
    public let problem: String

    public init(_ problem: String) {
        self.problem = problem
    }

    public var description: String { problem }
}

extension EnvironmentReader {
    /// A rate limit (``RateLimit/parse(_:)``); unset, the setting's default; `nil` for `off`.
    public mutating func rateLimit(_ setting: Setting) -> RateLimit? {
        let fallback = setting.defaultValue.flatMap { try? RateLimit.parse($0) }
        guard let text = string(setting) else { return fallback }
        do {
            return try RateLimit.parse(text)
        } catch {
            report(
                "\(setting.name)=\(text.prefix(64)) is not valid (\(error.problem)): write \(RateLimit.grammar); "
                    + "e.g. \(setting.example)"
            )
            return fallback
        }
    }
}
