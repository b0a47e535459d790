/// Settings that cannot be used as given. Each problem is one line naming the variable and what to
/// set it to; the executable prints them all and exits with status 2 (DESIGN.md, Configuration).
public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    public var problems: [String]

    public init(problems: [String]) {
        self.problems = problems
    }

    public var description: String { problems.joined(separator: "\n") }
}

/// Reads typed settings from an environment dictionary, collecting every problem instead of
/// stopping at the first, so an operator fixes them all in one go. It reads only the variables of
/// ``Setting/all``: each read names a ``Setting``, so no variable escapes the reference.
public struct EnvironmentReader: Sendable {
    private let environment: [String: String]
    public private(set) var problems: [String] = []

    public init(_ environment: [String: String]) {
        self.environment = environment
    }

    /// The trimmed value, or `nil` when unset or blank.
    public func string(_ setting: Setting) -> String? {
        guard let value = environment[setting.name]?.trimmingWhitespace(), !value.isEmpty else { return nil }
        return value
    }

    /// Whether the variable holds a value (blank counts as unset).
    public func isSet(_ setting: Setting) -> Bool {
        string(setting) != nil
    }

    public mutating func require(_ setting: Setting, _ meaning: String) -> String? {
        guard let value = string(setting) else {
            problems.append("\(setting.name) is not set: set it to \(meaning)")
            return nil
        }
        return value
    }

    /// A whole number in ``Setting/range``; unset, the setting's default (`nil` when it has none).
    public mutating func integer(_ setting: Setting) -> Int? {
        let fallback = setting.defaultValue.flatMap { Int($0) }
        guard let text = string(setting) else { return fallback }
        guard let value = Int(text), setting.range.map({ $0.contains(value) }) ?? true else {
            problems.append(
                "\(setting.name)=\(text) is not valid: use \(setting.accepted) "
                    + (setting.defaultValue.map { "(default \($0))" }
                        ?? "(or leave it unset: \(setting.defaultDescription))")
            )
            return fallback
        }
        return value
    }

    public mutating func choice<T>(
        _ setting: Setting,
        default fallback: T,
        _ parse: (String) -> T?,
        allowed: String
    ) -> T {
        guard let text = string(setting) else { return fallback }
        guard let value = parse(text) else {
            problems.append("\(setting.name)=\(text) is not valid: use one of \(allowed)")
            return fallback
        }
        return value
    }

    /// A switch written `1` (on) or `0` (off); unset, `fallback`.
    public mutating func flag(_ setting: Setting, default fallback: Bool) -> Bool {
        choice(setting, default: fallback, { ["1": true, "0": false][$0] }, allowed: "1 or 0")
    }

    /// The bounds on one bearer key's length, in characters (`HERALD_API_KEYS`,
    /// `HERALD_ADMIN_READONLY_KEYS`, `HERALD_METRICS_TOKEN`).
    public static let keyLengths = 16...512

    /// Comma-separated bearer keys: surrounding spaces ignored, empty entries dropped; a key that
    /// is too short, too long or holds spaces or control characters is a problem naming its
    /// position (never the key itself). Unset: none.
    public mutating func keys(_ setting: Setting) -> [String] {
        guard let text = string(setting) else { return [] }
        var keys: [String] = []
        for (index, part) in text.split(separator: ",", omittingEmptySubsequences: false).enumerated() {
            let key = String(part).trimmingWhitespace()
            if key.isEmpty { continue }
            let printable = key.unicodeScalars.allSatisfy { $0.value > 0x20 && $0.value < 0x7F }
            if !Self.keyLengths.contains(key.count) || !printable {
                problems.append(
                    "\(setting.name) entry \(index + 1) is not usable: use \(Self.keyLengths.lowerBound) to "
                        + "\(Self.keyLengths.upperBound) printable ASCII characters without spaces or commas per key "
                        + "(e.g. from `openssl rand -hex 32`)"
                )
            }
            keys.append(key)
        }
        return keys
    }

    public mutating func report(_ problem: String) {
        problems.append(problem)
    }

    /// Throws every problem collected so far, if any.
    public func validate() throws(ConfigurationError) {
        if !problems.isEmpty { throw ConfigurationError(problems: problems) }
    }
}

extension String {
    func trimmingWhitespace() -> String {
        var scalars = Substring(self)
        while let first = scalars.first, first.isWhitespace { scalars.removeFirst() }
        while let last = scalars.last, last.isWhitespace { scalars.removeLast() }
        return String(scalars)
    }
}
