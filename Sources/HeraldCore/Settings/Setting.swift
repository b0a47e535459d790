/// One environment variable Herald reads: its name, what it means, its default, an example, whether
/// it is a secret, and what values it accepts.
///
/// ``Setting/all`` is the one catalog of them. Each is declared by exactly one feature or by the
/// core (HeraldAPI's `HeraldFeatures`, a test checks it), and `herald serve --help`, `herald config`,
/// docs/CONFIGURATION.md and contrib/herald.env.example are generated from those declarations, so
/// none of them can name a variable the code does not read.
public struct Setting: Sendable, Hashable, CustomStringConvertible {
    /// The sections of the reference, in the order a newcomer needs them.
    public enum Group: String, Sendable, CaseIterable {
        case server = "HTTP server"
        case logging = "Logging"
        case database = "Database"
        case apiKeys = "API keys"
        case clientTokens = "Client tokens"
        case apns = "APNs (Apple's push service)"
        case relay = "Relay (Mastodon WebPush)"
        case jobs = "Jobs (durable work)"
        case webhooks = "Webhooks"
        case cloudKit = "CloudKit (wake pings through records)"
        case admin = "Admin console"
    }

    /// How much of a value may be shown.
    public enum Secrecy: Sendable, Hashable {
        /// The value can be printed.
        case none
        /// The value is a secret: only whether it is set is shown.
        case whole
        /// A URL whose password is a secret (`postgres://user:password@host/db`).
        case urlPassword
    }

    public let name: String
    public let group: Group
    /// A sentence saying what the variable sets.
    public let meaning: String
    /// The value used when the variable is unset, as it would be written; `nil` when there is none.
    public let defaultValue: String?
    /// What happens when it is unset and has no ``defaultValue``, e.g. "no limit".
    public let whenUnset: String?
    /// A value a reader could copy.
    public let example: String
    public let secrecy: Secrecy
    /// The values accepted, as a phrase ("a whole number from 1 to 1024").
    public let accepted: String
    /// For whole numbers: the range accepted, read by ``EnvironmentReader/integer(_:)``.
    public let range: ClosedRange<Int>?
    /// The command-line flag of `herald serve` that overrides it, if any.
    public let flag: String?

    public init(
        _ name: String,
        group: Group,
        meaning: String,
        default defaultValue: String? = nil,
        whenUnset: String? = nil,
        example: String,
        secrecy: Secrecy = .none,
        accepted: String,
        range: ClosedRange<Int>? = nil,
        flag: String? = nil
    ) {
        self.name = name
        self.group = group
        self.meaning = meaning
        self.defaultValue = defaultValue
        self.whenUnset = whenUnset
        self.example = example
        self.secrecy = secrecy
        self.accepted = accepted
        self.range = range
        self.flag = flag
    }

    /// A whole-number setting; ``accepted`` says the range and the unit.
    public static func integer(
        _ name: String,
        group: Group,
        meaning: String,
        default defaultValue: Int?,
        whenUnset: String? = nil,
        example: Int,
        range: ClosedRange<Int>,
        unit: String? = nil
    ) -> Setting {
        Setting(
            name,
            group: group,
            meaning: meaning,
            default: defaultValue.map(String.init),
            whenUnset: whenUnset,
            example: String(example),
            accepted: "a whole number\(unit.map { " of \($0)" } ?? "") from \(range.lowerBound) to \(range.upperBound)",
            range: range
        )
    }

    /// The default as a reader should see it: the value, or what happens without one.
    public var defaultDescription: String {
        defaultValue ?? whenUnset ?? "unset"
    }

    public var description: String { name }
}
