import Foundation

/// A small command-line parser in the spirit of swift-argument-parser: options are declared,
/// parsed strictly, and every mistake gets a message that says what to type instead.
public struct CommandSpec: Sendable {
    public struct Option: Sendable {
        public var name: String
        public var valueName: String?
        public var help: String
        public var repeatable: Bool

        /// `valueName == nil` declares a flag (`--sandbox`); otherwise the option takes a value
        /// (`--port N` or `--port=N`).
        public init(_ name: String, value valueName: String? = nil, repeatable: Bool = false, help: String) {
            self.name = name
            self.valueName = valueName
            self.help = help
            self.repeatable = repeatable
        }
    }

    public var name: String
    public var summary: String
    public var usage: String
    public var options: [Option]

    public init(name: String, summary: String, usage: String, options: [Option]) {
        self.name = name
        self.summary = summary
        self.usage = usage
        self.options = options
    }

    /// The `--help` text.
    public var help: String {
        var text = "\(summary)\n\nUsage: \(usage)\n"
        let all = options + [Option("help", help: "Show this help.")]
        text += "\nOptions:\n"
        let labels = all.map { option in "--\(option.name)" + (option.valueName.map { " \($0)" } ?? "") }
        let width = (labels.map(\.count).max() ?? 0) + 2
        for (label, option) in zip(labels, all) {
            text += "  " + label.padding(toLength: width, withPad: " ", startingAt: 0) + option.help + "\n"
        }
        return text
    }

    /// Parses `arguments` (without the command name).
    public func parse(_ arguments: [String]) throws(UsageError) -> ParsedArguments {
        var parsed = ParsedArguments()
        var index = 0
        var onlyPositionals = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if onlyPositionals || !argument.hasPrefix("--") || argument == "-" {
                parsed.positionals.append(argument)
                continue
            }
            if argument == "--" {
                onlyPositionals = true
                continue
            }
            var name = String(argument.dropFirst(2))
            var inlineValue: String?
            if let equals = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            if name == "help" {
                parsed.wantsHelp = true
                continue
            }
            guard let option = options.first(where: { $0.name == name }) else {
                throw UsageError("unknown option --\(name) for '\(self.name)'; see '\(self.name) --help'")
            }
            if option.valueName == nil {
                guard inlineValue == nil else { throw UsageError("--\(name) takes no value") }
                parsed.flags.insert(name)
                continue
            }
            let value: String
            if let inlineValue {
                value = inlineValue
            } else if index < arguments.count {
                value = arguments[index]
                index += 1
            } else {
                throw UsageError("--\(name) needs a value (\(option.valueName ?? "VALUE"))")
            }
            if !option.repeatable, parsed.values[name] != nil {
                throw UsageError("--\(name) given twice; give it once")
            }
            parsed.values[name, default: []].append(value)
        }
        return parsed
    }
}

/// What ``CommandSpec/parse(_:)`` found.
public struct ParsedArguments: Sendable {
    public var values: [String: [String]] = [:]
    public var flags: Set<String> = []
    public var positionals: [String] = []
    public var wantsHelp = false

    public init() {}

    /// The value of a single-valued option.
    public func value(_ name: String) -> String? { values[name]?.last }

    /// Every value of a repeatable option, in order.
    public func all(_ name: String) -> [String] { values[name] ?? [] }

    public func flag(_ name: String) -> Bool { flags.contains(name) }

    /// The whole number given for `--name`, `fallback` when absent; an error naming the option and
    /// the accepted range otherwise.
    public func integer(_ name: String, default fallback: Int, range: ClosedRange<Int>) throws(UsageError) -> Int {
        guard let text = value(name) else { return fallback }
        guard let number = Int(text), range.contains(number) else {
            throw UsageError(
                "--\(name) \(text) is not valid: use a whole number from \(range.lowerBound) to \(range.upperBound)"
            )
        }
        return number
    }
}

/// A command line that cannot be run as typed; the message says what to change.
public struct UsageError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
