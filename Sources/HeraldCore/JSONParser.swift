/// The one strict JSON grammar (RFC 8259) of Herald, over bytes: ``JSONValue/parse(_:maximumDepth:)``
/// builds the value, ``JSONValue/check(_:maximumDepth:)`` only checks the text. Trailing commas,
/// duplicate keys in one object, comments, single quotes, a byte order mark, numbers beyond a
/// double and the like are refused with the line, column and key path of the fault, and a message
/// that says what to fix.
///
/// The nesting is tracked on an explicit stack, never by recursion, so a deep body cannot
/// overflow the thread's stack.
///
/// ```swift
/// do {
///     let value = try JSONValue.parse(body, maximumDepth: 32)
/// } catch {
///     print("line \(error.line), column \(error.column): \(error.message)")
/// }
/// ```
extension JSONValue {
    /// The deepest nesting of arrays and objects accepted in an APNs payload.
    public static let payloadMaximumDepth = 64

    /// The value of `bytes`: one strict JSON value, surrounded by whitespace at most, nesting at
    /// most `maximumDepth` arrays and objects. Strings must be valid UTF-8 with `\u` surrogates in
    /// pairs. Numbers without a fraction or an exponent are integers when they fit in 64 bits;
    /// the others are doubles.
    ///
    /// - Throws: the first ``JSONFault``.
    public static func parse(_ bytes: [UInt8], maximumDepth: Int = 512) throws(JSONFault) -> JSONValue {
        var scanner = JSONScanner(bytes: bytes, maximumDepth: maximumDepth, build: true)
        if let fault = scanner.run() { throw fault }
        return scanner.root ?? .null
    }

    /// The first fault of `bytes`, or `nil` when they are one strict JSON value, as
    /// ``parse(_:maximumDepth:)`` reads it, building nothing. Strings are only checked for their
    /// grammar: bytes of 0x80 and above and lone surrogates pass, for a payload only passed on.
    public static func check(_ bytes: [UInt8], maximumDepth: Int = 512) -> JSONFault? {
        var scanner = JSONScanner(bytes: bytes, maximumDepth: maximumDepth, build: false)
        return scanner.run()
    }
}

/// Where and why a text is not strict JSON.
public struct JSONFault: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        /// Not JSON at all at this point (``message`` says what was expected).
        case syntax
        /// An object repeats a key (``path`` names it).
        case duplicateKey
        /// Arrays and objects nest deeper than allowed.
        case tooDeep
        /// A string holds bytes that are not UTF-8 (only ``JSONValue/parse(_:maximumDepth:)``
        /// checks; ``path`` names the member).
        case invalidUTF8
    }

    public var kind: Kind
    /// 1-based line (counting `\n`).
    public var line: Int
    /// 1-based column, in Unicode scalars from the start of the line.
    public var column: Int
    /// What is wrong and how to fix it, e.g. "a trailing comma before }: remove the comma".
    public var message: String
    /// The keys and indexes leading to the fault, outermost first, e.g. `payload`, `aps`, `alert`.
    public var path: [JSONPathComponent]

    public init(kind: Kind, line: Int, column: Int, message: String, path: [JSONPathComponent]) {
        self.kind = kind
        self.line = line
        self.column = column
        self.message = message
        self.path = path
    }

    public var description: String { "line \(line), column \(column): \(message)" }

    /// ``path`` as `payload.aps.alert` or `tokens[3]`; `nil` at the top level.
    public var pathText: String? {
        guard !path.isEmpty else { return nil }
        var text = ""
        for component in path {
            switch component {
            case .key(let key):
                if !text.isEmpty { text += "." }
                text += String(key.prefix(64))
            case .index(let index): text += "[\(index)]"
            }
        }
        return text
    }
}

/// One step into a JSON document.
public enum JSONPathComponent: Sendable, Hashable {
    case key(String)
    case index(Int)
}

/// An open array or object: its keys so far (objects) or its next index (arrays).
private struct JSONContainer {
    var isObject: Bool
    var keys: Set<String> = []
    var count = 0
    /// The key or index under which the value being read sits.
    var current: JSONPathComponent?
    /// The members read so far, when building.
    var members: [String: JSONValue] = [:]
    /// The items read so far, when building.
    var items: [JSONValue] = []
}

private struct JSONScanner {
    let bytes: [UInt8]
    let maximumDepth: Int
    var index = 0
    var line = 1
    var column = 1
    var stack: [JSONContainer] = []
    /// Whether values are built (``root``) and strings checked as UTF-8.
    let build: Bool
    /// The value read, when building.
    var root: JSONValue?

    init(bytes: [UInt8], maximumDepth: Int, build: Bool) {
        self.bytes = bytes
        self.maximumDepth = maximumDepth
        self.build = build
    }

    mutating func run() -> JSONFault? {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
            return fault("a byte order mark before the JSON value: send UTF-8 without one")
        }
        skipWhitespace()
        if let fault = value() { return fault }
        skipWhitespace()
        guard index == bytes.count else {
            return fault("more text after the JSON value: send one JSON value")
        }
        return nil
    }

    // MARK: Values

    /// Reads one value; containers are read iteratively with ``stack``.
    private mutating func value() -> JSONFault? {
        if let fault = scalarOrOpen() { return fault }
        while !stack.isEmpty {
            skipWhitespace()
            let isObject = stack[stack.count - 1].isObject
            let close: UInt8 = isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")
            guard index < bytes.count else {
                return fault(
                    "the text ends inside \(isObject ? "an object" : "an array"): close it with "
                        + "\(isObject ? "}" : "]")"
                )
            }
            let byte = bytes[index]
            if stack[stack.count - 1].count == 0 && byte == close {
                advance()
                closeContainer()
                continue
            }
            if stack[stack.count - 1].count > 0 {
                if byte == close {
                    advance()
                    closeContainer()
                    continue
                }
                guard byte == UInt8(ascii: ",") else {
                    return fault("expected , or \(isObject ? "}" : "]") here, found \(describe(byte))")
                }
                let commaLine = line
                let commaColumn = column
                advance()
                skipWhitespace()
                if index < bytes.count, bytes[index] == close {
                    return JSONFault(
                        kind: .syntax,
                        line: commaLine,
                        column: commaColumn,
                        message: "a trailing comma before \(isObject ? "}" : "]"): remove the comma",
                        path: path()
                    )
                }
            }
            if isObject {
                if let fault = member() { return fault }
            } else {
                stack[stack.count - 1].current = .index(stack[stack.count - 1].count)
                stack[stack.count - 1].count += 1
                if let fault = scalarOrOpen() { return fault }
            }
        }
        return nil
    }

    /// Closes the innermost container and hands its value to the one around it.
    private mutating func closeContainer() {
        let container = stack.removeLast()
        guard build else { return }
        deliver(container.isObject ? .object(container.members) : .array(container.items))
    }

    /// Puts a finished value in the innermost container, or makes it the ``root``.
    private mutating func deliver(_ value: JSONValue) {
        guard build else { return }
        guard !stack.isEmpty else {
            root = value
            return
        }
        let top = stack.count - 1
        if stack[top].isObject {
            if case .key(let key) = stack[top].current { stack[top].members[key] = value }
        } else {
            stack[top].items.append(value)
        }
    }

    /// Reads `"key": ` and the start of its value in the innermost object.
    private mutating func member() -> JSONFault? {
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
            let found = index < bytes.count ? describe(bytes[index]) : "the end of the text"
            return fault("expected a key in double quotes, found \(found)")
        }
        let keyLine = line
        let keyColumn = column
        var key = ""
        if let fault = string(decode: true, into: &key) { return fault }
        let top = stack.count - 1
        stack[top].current = .key(key)
        stack[top].count += 1
        // Every earlier member's value is complete by now: when building, they are the keys so far.
        let isNew = build ? stack[top].members[key] == nil : stack[top].keys.insert(key).inserted
        guard isNew else {
            return JSONFault(
                kind: .duplicateKey,
                line: keyLine,
                column: keyColumn,
                message: "the key \(Self.quoted(key)) appears twice in the same object: keep one",
                path: path()
            )
        }
        skipWhitespace()
        guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else {
            let found = index < bytes.count ? describe(bytes[index]) : "the end of the text"
            return fault("expected : after the key \(Self.quoted(key)), found \(found)")
        }
        advance()
        skipWhitespace()
        return scalarOrOpen()
    }

    /// Reads a string, number or literal, or opens an array or object (pushed on ``stack``).
    private mutating func scalarOrOpen() -> JSONFault? {
        guard index < bytes.count else { return fault("expected a JSON value, found the end of the text") }
        let byte = bytes[index]
        switch byte {
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            guard stack.count < maximumDepth else {
                return JSONFault(
                    kind: .tooDeep,
                    line: line,
                    column: column,
                    message: "arrays and objects nest more than \(maximumDepth) levels deep",
                    path: path()
                )
            }
            advance()
            stack.append(JSONContainer(isObject: byte == UInt8(ascii: "{")))
            return nil
        case UInt8(ascii: "\""):
            var text = ""
            if let fault = string(decode: build, into: &text) { return fault }
            deliver(.string(text))
            return nil
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return number()
        case UInt8(ascii: "t"):
            if let fault = literal("true") { return fault }
            deliver(.bool(true))
            return nil
        case UInt8(ascii: "f"):
            if let fault = literal("false") { return fault }
            deliver(.bool(false))
            return nil
        case UInt8(ascii: "n"):
            if let fault = literal("null") { return fault }
            deliver(.null)
            return nil
        default:
            let hint = byte == UInt8(ascii: "'") ? ": use double quotes for strings" : ""
            return fault("expected a JSON value, found \(describe(byte))\(hint)")
        }
    }

    private mutating func literal(_ word: String) -> JSONFault? {
        for byte in word.utf8 {
            guard index < bytes.count, bytes[index] == byte else {
                return fault("expected the literal \(word), written in lower case")
            }
            advance()
        }
        return nil
    }

    private mutating func number() -> JSONFault? {
        let start = index
        let startLine = line
        let startColumn = column
        if bytes[index] == UInt8(ascii: "-") { advance() }
        guard index < bytes.count, isDigit(bytes[index]) else {
            return fault("expected a digit in the number")
        }
        if bytes[index] == UInt8(ascii: "0") {
            advance()
            if index < bytes.count, isDigit(bytes[index]) {
                return fault("a number cannot start with 0 followed by digits: drop the leading zeros")
            }
        } else {
            while index < bytes.count, isDigit(bytes[index]) { advance() }
        }
        var integral = true
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            integral = false
            advance()
            guard index < bytes.count, isDigit(bytes[index]) else {
                return fault("expected a digit after the decimal point")
            }
            while index < bytes.count, isDigit(bytes[index]) { advance() }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            integral = false
            advance()
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                advance()
            }
            guard index < bytes.count, isDigit(bytes[index]) else {
                return fault("expected a digit in the exponent")
            }
            while index < bytes.count, isDigit(bytes[index]) { advance() }
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        if integral, let integer = Int64(text) {
            deliver(.integer(integer))
            return nil
        }
        guard let double = Double(text), double.isFinite else {
            return JSONFault(
                kind: .syntax,
                line: startLine,
                column: startColumn,
                message: "the number \(text.prefix(32)) is beyond the range of a double: send a smaller number",
                path: path()
            )
        }
        deliver(.double(double))
        return nil
    }

    /// Reads a string; with `decode`, also appends its decoded text to `text` (object keys are
    /// compared as decoded text: `"a"` and `"\u0061"` are the same key).
    private mutating func string(decode: Bool, into text: inout String) -> JSONFault? {
        advance()  // the opening quote
        // Most strings hold no escape: read them straight from the bytes up to the closing quote.
        var end = index
        var columns = 0
        while end < bytes.count {
            let byte = bytes[end]
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 { break }
            if byte & 0xC0 != 0x80 { columns += 1 }
            end += 1
        }
        if end < bytes.count, bytes[end] == UInt8(ascii: "\"") {
            let start = index
            index = end
            column += columns
            if decode {
                if build {
                    guard let decoded = String(validating: bytes[start..<end], as: UTF8.self) else {
                        var fault = fault("the string is not valid UTF-8: send the text as UTF-8")
                        fault.kind = .invalidUTF8
                        return fault
                    }
                    text += decoded
                } else {
                    text += String(decoding: bytes[start..<end], as: UTF8.self)
                }
            }
            advance()
            return nil
        }
        var raw: [UInt8] = []
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                if decode {
                    guard build else {
                        text += String(decoding: raw, as: UTF8.self)
                        advance()
                        return nil
                    }
                    guard let decoded = String(validating: raw, as: UTF8.self) else {
                        var fault = fault("the string is not valid UTF-8: send the text as UTF-8")
                        fault.kind = .invalidUTF8
                        return fault
                    }
                    text += decoded
                }
                advance()
                return nil
            case UInt8(ascii: "\\"):
                advance()
                guard index < bytes.count else { return fault("the text ends inside a string") }
                let escape = bytes[index]
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"):
                    raw.append(escape)
                case UInt8(ascii: "b"): raw.append(0x08)
                case UInt8(ascii: "f"): raw.append(0x0C)
                case UInt8(ascii: "n"): raw.append(0x0A)
                case UInt8(ascii: "r"): raw.append(0x0D)
                case UInt8(ascii: "t"): raw.append(0x09)
                case UInt8(ascii: "u"):
                    advance()
                    var code: UInt32 = 0
                    for _ in 0..<4 {
                        guard index < bytes.count, let digit = hexValue(bytes[index]) else {
                            return fault("\\u must be followed by four hexadecimal digits")
                        }
                        code = code << 4 | digit
                        advance()
                    }
                    if build, (0xD800..<0xDC00).contains(code) {
                        // A high surrogate must be followed by an escaped low one: one scalar.
                        guard bytes.count - index >= 6, bytes[index] == UInt8(ascii: "\\"),
                            bytes[index + 1] == UInt8(ascii: "u")
                        else {
                            return fault("\\u\(String(code, radix: 16)) is half a surrogate pair: add its low half")
                        }
                        advance()
                        advance()
                        var low: UInt32 = 0
                        for _ in 0..<4 {
                            guard index < bytes.count, let digit = hexValue(bytes[index]) else {
                                return fault("\\u must be followed by four hexadecimal digits")
                            }
                            low = low << 4 | digit
                            advance()
                        }
                        guard (0xDC00..<0xE000).contains(low) else {
                            return fault("\\u\(String(code, radix: 16)) is half a surrogate pair: add its low half")
                        }
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    } else if build, (0xDC00..<0xE000).contains(code) {
                        return fault("\\u\(String(code, radix: 16)) is a lone low surrogate: escape whole characters")
                    }
                    // Without building, unpaired surrogates decode as U+FFFD: key comparison only needs a stable text.
                    if decode {
                        raw += Array(String(Unicode.Scalar(code).map(Character.init) ?? "\u{FFFD}").utf8)
                    }
                    continue
                default:
                    return fault(
                        "\\\(describeEscape(escape)) is not a JSON escape: use \\\" \\\\ \\/ \\b \\f \\n "
                            + "\\r \\t or \\uXXXX"
                    )
                }
                advance()
            case 0..<0x20:
                return fault("a control character inside a string: escape it (\\n, \\t or \\uXXXX)")
            default:
                if decode { raw.append(byte) }
                advance()
            }
        }
        return fault("the text ends inside a string: close it with \"")
    }

    // MARK: Position

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"): advance()
            default: return
            }
        }
    }

    private mutating func advance() {
        let byte = bytes[index]
        index += 1
        if byte == UInt8(ascii: "\n") {
            line += 1
            column = 1
        } else if byte & 0xC0 != 0x80 {
            column += 1
        }
    }

    private func path() -> [JSONPathComponent] {
        stack.compactMap(\.current)
    }

    private func fault(_ message: String) -> JSONFault {
        JSONFault(kind: .syntax, line: line, column: column, message: message, path: path())
    }

    private func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    private func hexValue(_ byte: UInt8) -> UInt32? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(byte - UInt8(ascii: "A") + 10)
        default: nil
        }
    }

    private func describe(_ byte: UInt8) -> String {
        switch byte {
        case UInt8(ascii: "/"): "/ (JSON has no comments)"
        case 0x21...0x7E: String(UnicodeScalar(byte))
        default: "the byte 0x\(String(byte, radix: 16, uppercase: true))"
        }
    }

    private func describeEscape(_ byte: UInt8) -> String {
        (0x21...0x7E).contains(byte) ? String(UnicodeScalar(byte)) : "0x\(String(byte, radix: 16))"
    }

    private static func quoted(_ key: String) -> String {
        key.utf8.count <= 64 ? "\"\(key)\"" : "\"\(key.prefix(61))...\""
    }
}
