public import Foundation
import Synchronization

/// How much a log line matters, in swift-log's order.
public enum LogLevel: Int, Sendable, Comparable, CaseIterable, CustomStringConvertible {
    case trace, debug, info, notice, warning, error, critical

    /// Parses `LOG_LEVEL` values (case-insensitive); `nil` for anything else.
    public init?(name: String) {
        guard let level = Self.allCases.first(where: { $0.description == name.lowercased() }) else { return nil }
        self = level
    }

    public var description: String {
        switch self {
        case .trace: "trace"
        case .debug: "debug"
        case .info: "info"
        case .notice: "notice"
        case .warning: "warning"
        case .error: "error"
        case .critical: "critical"
        }
    }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The name as text log lines show it.
    var upperCaseName: String {
        switch self {
        case .trace: "TRACE"
        case .debug: "DEBUG"
        case .info: "INFO"
        case .notice: "NOTICE"
        case .warning: "WARNING"
        case .error: "ERROR"
        case .critical: "CRITICAL"
        }
    }
}

/// A structured log value. Strings are quoted in text output when they contain spaces.
public enum LogValue: Sendable, Equatable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    CustomStringConvertible
{
    case string(String)
    case int(Int)
    case double(Double)
    case bool(Bool)

    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .int(value) }

    public var description: String {
        switch self {
        case .string(let value): value
        case .int(let value): String(value)
        case .double(let value): String(value)
        case .bool(let value): String(value)
        }
    }
}

/// One log record as handed to a ``LogHandler``.
public struct LogRecord: Sendable {
    public var time: Date
    public var level: LogLevel
    public var label: String
    public var message: String
    public var metadata: [(key: String, value: LogValue)]
}

/// Where log records go. Handlers are shared by every copy of a ``Logger``.
public protocol LogHandler: Sendable {
    func log(_ record: LogRecord)
}

/// A value-type logger in the shape of swift-log's: a label, a minimum level and metadata carried
/// by copies. Secrets must never be passed as metadata or message text.
///
/// ```swift
/// var logger = Logger(label: "herald.http")
/// logger[metadataKey: "request_id"] = "abc"
/// logger.info("request", metadata: ["status": 200])
/// ```
public struct Logger: Sendable {
    public var label: String
    public var logLevel: LogLevel
    public var metadata: [String: LogValue] = [:]
    public let handler: any LogHandler

    public init(label: String, level: LogLevel = LoggingSystem.defaultLevel, handler: (any LogHandler)? = nil) {
        self.label = label
        self.logLevel = level
        self.handler = handler ?? LoggingSystem.defaultHandler
    }

    public subscript(metadataKey key: String) -> LogValue? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(_ level: LogLevel, _ message: @autoclosure () -> String, metadata extra: [String: LogValue] = [:]) {
        guard level >= logLevel else { return }
        var merged = extra
        if !metadata.isEmpty { merged.merge(metadata) { new, _ in new } }
        let ordered = merged.sorted { $0.key < $1.key }
        handler.log(LogRecord(time: Date(), level: level, label: label, message: message(), metadata: ordered))
    }

    /// ``log(_:_:metadata:)`` for metadata whose keys are already unique and in order, without
    /// a dictionary to build and sort: for lines written on every request. The logger's own
    /// metadata is merged in as usual (the values given here win).
    public func log(
        _ level: LogLevel,
        _ message: @autoclosure () -> String,
        sortedMetadata: [(key: String, value: LogValue)]
    ) {
        guard level >= logLevel else { return }
        assert(zip(sortedMetadata, sortedMetadata.dropFirst()).allSatisfy { $0.key < $1.key }, "keys out of order")
        guard metadata.isEmpty else {
            log(level, message(), metadata: Dictionary(sortedMetadata, uniquingKeysWith: { first, _ in first }))
            return
        }
        handler.log(LogRecord(time: Date(), level: level, label: label, message: message(), metadata: sortedMetadata))
    }

    public func trace(_ message: @autoclosure () -> String, metadata: [String: LogValue] = [:]) {
        log(.trace, message(), metadata: metadata)
    }
    public func debug(_ message: @autoclosure () -> String, metadata: [String: LogValue] = [:]) {
        log(.debug, message(), metadata: metadata)
    }
    public func info(_ message: @autoclosure () -> String, metadata: [String: LogValue] = [:]) {
        log(.info, message(), metadata: metadata)
    }
    public func notice(_ message: @autoclosure () -> String, metadata: [String: LogValue] = [:]) {
        log(.notice, message(), metadata: metadata)
    }
    public func warning(_ message: @autoclosure () -> String, metadata: [String: LogValue] = [:]) {
        log(.warning, message(), metadata: metadata)
    }
    public func error(_ message: @autoclosure () -> String, metadata: [String: LogValue] = [:]) {
        log(.error, message(), metadata: metadata)
    }
}

/// Process-wide logging defaults, set once by the executable before anything logs.
public enum LoggingSystem {
    private static let state = Mutex<(level: LogLevel, handler: any LogHandler)>(
        (.info, StreamLogHandler(format: .text))
    )

    public static var defaultLevel: LogLevel { state.withLock { $0.level } }
    public static var defaultHandler: any LogHandler { state.withLock { $0.handler } }

    public static func bootstrap(level: LogLevel, handler: any LogHandler) {
        state.withLock { $0 = (level, handler) }
    }
}

/// Writes one line per record to standard error, as `text` (logfmt-like) or `json`.
///
/// Lines go out in batches (``BatchedLineWriter``): warnings and worse are written before
/// `log` returns, lower levels within moments, and all of them at a normal exit.
public struct StreamLogHandler: LogHandler {
    public enum Format: String, Sendable { case text, json }

    public let format: Format
    private let sink: (@Sendable (String) -> Void)?

    /// - Parameter sink: where rendered lines go instead of standard error (tests).
    public init(format: Format, sink: (@Sendable (String) -> Void)? = nil) {
        self.format = format
        self.sink = sink
    }

    public func log(_ record: LogRecord) {
        let line = Self.render(record, format: format)
        if let sink {
            sink(line)
        } else {
            BatchedLineWriter.standardError.write(line, urgent: record.level >= .warning)
        }
    }

    public static func render(_ record: LogRecord, format: Format) -> String {
        let time = RFC3339.string(from: record.time, fractional: true)
        switch format {
        case .text:
            // Appended piece by piece into one allocation: this runs for every access-log line.
            var line = time
            line.reserveCapacity(128 + record.message.utf8.count + record.metadata.count * 48)
            line += " "
            line += record.level.upperCaseName
            line += " "
            line += record.label
            line += ": "
            line += record.message
            for (key, value) in record.metadata {
                line += " "
                line += key
                line += "="
                line += textValue(value)
            }
            return line
        case .json:
            var line = "{\"time\":\(JSONText.quote(time)),\"level\":\(JSONText.quote(record.level.description))"
            line += ",\"logger\":\(JSONText.quote(record.label)),\"message\":\(JSONText.quote(record.message))"
            for (key, value) in record.metadata {
                line += ",\(JSONText.quote(key)):"
                switch value {
                case .string(let string): line += JSONText.quote(string)
                case .int(let int): line += String(int)
                case .double(let double): line += double.isFinite ? String(double) : "null"
                case .bool(let bool): line += String(bool)
                }
            }
            return line + "}"
        }
    }

    private static func textValue(_ value: LogValue) -> String {
        guard case .string(let string) = value else { return value.description }
        // Bytes, not characters (this runs for every value of every line): spaces, quotes, `=`,
        // control characters and anything beyond ASCII (which holds the other line breaks) are
        // quoted.
        let needsQuotes =
            string.isEmpty
            || string.utf8.contains {
                $0 <= 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "=") || $0 >= 0x7F
            }
        return needsQuotes ? JSONText.quote(string) : string
    }
}
