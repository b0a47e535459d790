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
/// stopping at the first, so an operator fixes them all in one go.
public struct EnvironmentReader: Sendable {
    public let environment: [String: String]
    public private(set) var problems: [String] = []

    public init(_ environment: [String: String]) {
        self.environment = environment
    }

    /// The trimmed value, or `nil` when unset or blank.
    public func string(_ name: String) -> String? {
        guard let value = environment[name]?.trimmingWhitespace(), !value.isEmpty else { return nil }
        return value
    }

    public mutating func require(_ name: String, _ meaning: String) -> String? {
        guard let value = string(name) else {
            problems.append("\(name) is not set: set it to \(meaning)")
            return nil
        }
        return value
    }

    public mutating func integer(_ name: String, default fallback: Int, range: ClosedRange<Int>) -> Int {
        guard let text = string(name) else { return fallback }
        guard let value = Int(text), range.contains(value) else {
            problems.append(
                "\(name)=\(text) is not valid: use a whole number from \(range.lowerBound) to \(range.upperBound)"
            )
            return fallback
        }
        return value
    }

    public mutating func choice<T>(_ name: String, default fallback: T, _ parse: (String) -> T?, allowed: String) -> T {
        guard let text = string(name) else { return fallback }
        guard let value = parse(text) else {
            problems.append("\(name)=\(text) is not valid: use one of \(allowed)")
            return fallback
        }
        return value
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
