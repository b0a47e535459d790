/// Reads one JSON object of a request body into typed values, field by field, with the one strict
/// grammar (``JSONValue/parse(_:maximumDepth:)``): each read names the field, its type and its
/// limits, and every refusal is a ``Refusal`` of the caller's domain naming the JSON path at fault
/// (`audience.tags.any[2]`) with a message that says what to fix.
///
/// A field that was not asked for is refused by ``finish()`` (or up front by
/// ``rejectUnknown(_:)``) as `unknown_field`, naming it and listing the fields there are: the one
/// place Herald spells that code.
///
/// ```swift
/// var body = try JSONObjectReader<WidgetDomain>(body: request.body, maximumDepth: 8, what: "a widget",
///                                               example: #"{"name": "w"}"#)
/// let name = try body.requiredString("name", maximumBytes: 255)
/// let size = try body.integer("size", in: 1...10) ?? 5
/// try body.finish()
/// ```
public struct JSONObjectReader<Domain: RefusalDomain>: Sendable {
    public typealias Failure = Refusal<Domain>

    /// The members of the object.
    public let members: [String: JSONValue]
    /// The JSON path of the object, empty for the body itself (`audience`, `devices[3]`).
    public let path: String
    /// What the object is, for messages: "a device", "a notification".
    public let what: String
    /// The keys read or asked for so far: the object's known fields.
    private var asked: Set<String> = []

    /// Reads `members` as the object at `path`.
    public init(members: [String: JSONValue], path: String = "", what: String) {
        self.members = members
        self.path = path
        self.what = what
    }

    /// Parses a request body that must be one JSON object.
    ///
    /// - Parameters:
    ///   - maximumDepth: the deepest nesting of arrays and objects, the body's object counting as 1.
    ///   - what: what the object is, for messages ("a device").
    ///   - example: a short valid body, quoted when the body is not an object.
    ///   - emptyIsObject: an empty (or whitespace only) body reads as `{}`.
    /// - Throws: `invalid_json` (not JSON, with line and column; or not an object), `duplicate_key`,
    ///   `too_deep` or `invalid_utf8`, naming the field when there is one.
    public init(
        body: [UInt8],
        maximumDepth: Int,
        what: String,
        example: String,
        emptyIsObject: Bool = false
    ) throws(Failure) {
        if emptyIsObject, body.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
            self.init(members: [:], what: what)
            return
        }
        let value: JSONValue
        do {
            value = try JSONValue.parse(body, maximumDepth: maximumDepth)
        } catch {
            throw Self.refusal(for: error, maximumDepth: maximumDepth)
        }
        guard case .object(let members) = value else {
            throw .invalid("invalid_json", "the body is not a JSON object: send \(example)", field: nil)
        }
        self.init(members: members, what: what)
    }

    /// The refusal for a body the grammar faulted: `too_deep` and `invalid_utf8` name the
    /// top-level field holding the fault, `duplicate_key` the repeated key's path, `invalid_json`
    /// the path of the member where the text stops being JSON (none at the top level).
    public static func refusal(for fault: JSONFault, maximumDepth: Int) -> Failure {
        var top: String?
        if case .key(let name)? = fault.path.first { top = String(name.prefix(64)) }
        switch fault.kind {
        case .tooDeep:
            return .invalid(
                "too_deep",
                "\(top.map { Self.quoted($0) } ?? "the body") nests arrays and objects more than \(maximumDepth) levels deep",
                field: top
            )
        case .duplicateKey:
            return .invalid(
                "duplicate_key",
                "the body repeats a key at line \(fault.line), column \(fault.column): \(fault.message)",
                field: fault.pathText
            )
        case .invalidUTF8:
            return .invalid(
                "invalid_utf8",
                "\(top.map { Self.quoted($0) } ?? "the body") is not valid UTF-8 at line \(fault.line), column "
                    + "\(fault.column): send JSON text encoded as UTF-8",
                field: top
            )
        case .syntax:
            return .invalid(
                "invalid_json",
                "the body is not valid JSON at line \(fault.line), column \(fault.column): \(fault.message)",
                field: fault.pathText
            )
        }
    }

    // MARK: Fields

    /// The JSON path of the member `key`: `key`, or `path.key`.
    public func field(_ key: String) -> String {
        let key = String(key.prefix(64))
        return path.isEmpty ? key : "\(path).\(key)"
    }

    /// Whether the object has the member `key` (`null` included), without reading it.
    public func has(_ key: String) -> Bool {
        members[key] != nil
    }

    /// The member `key` as it is, `null` included; `nil` when absent. For values passed on as
    /// JSON (APNs payload fragments).
    public mutating func raw(_ key: String) -> JSONValue? {
        asked.insert(key)
        return members[key]
    }

    /// The member `key`; `nil` when absent or `null`.
    public mutating func value(_ key: String) -> JSONValue? {
        guard let value = raw(key), value != .null else { return nil }
        return value
    }

    /// The member `key`, present and not `null`.
    ///
    /// - Parameter hint: what to send, after "`key` is missing: ".
    /// - Throws: `missing_field`.
    public mutating func required(_ key: String, hint: String) throws(Failure) -> JSONValue {
        guard let value = value(key) else {
            throw .invalid("missing_field", "\(field(key)) is missing: \(hint)", field: field(key))
        }
        return value
    }

    /// A string member; `nil` when absent or `null`.
    ///
    /// - Parameters:
    ///   - maximumBytes: the most UTF-8 bytes it may have.
    ///   - allowEmpty: `false` refuses `""`.
    ///   - code: the code of every refusal; default `invalid_<key>`.
    ///   - tooLongCode: when set, a string over `maximumBytes` is refused as too large (413) with
    ///     this code rather than as invalid.
    ///   - message: the whole sentence for a value that is not a string; default "`key` must be a
    ///     string".
    public mutating func string(
        _ key: String,
        maximumBytes: Int = .max,
        allowEmpty: Bool = true,
        code: String? = nil,
        tooLongCode: String? = nil,
        message: String? = nil
    ) throws(Failure) -> String? {
        guard let value = value(key) else { return nil }
        return try Self.string(
            value,
            field: field(key),
            maximumBytes: maximumBytes,
            allowEmpty: allowEmpty,
            code: code ?? "invalid_\(key)",
            tooLongCode: tooLongCode,
            message: message
        )
    }

    /// A string member that must be there; see
    /// ``string(_:maximumBytes:allowEmpty:code:tooLongCode:message:)``.
    public mutating func requiredString(
        _ key: String,
        maximumBytes: Int = .max,
        allowEmpty: Bool = false,
        code: String? = nil,
        hint: String = "send a string"
    ) throws(Failure) -> String {
        let value = try required(key, hint: hint)
        return try Self.string(
            value,
            field: field(key),
            maximumBytes: maximumBytes,
            allowEmpty: allowEmpty,
            code: code ?? "invalid_\(key)",
            tooLongCode: nil
        )
    }

    /// `value` as a string at `field`, checked as
    /// ``string(_:maximumBytes:allowEmpty:code:tooLongCode:message:)`` checks.
    // Not optimized: Swift 6.3.1's optimizer crashes on this function in release builds
    // (FunctionSignatureOpts asserts `!type.hasTypeParameter()`, also with the checks moved out of
    // it). It does what a caller's `guard case .string` would; its callers are optimized.
    @_optimize(none)
    public static func string(
        _ value: JSONValue,
        field: String,
        maximumBytes: Int = .max,
        allowEmpty: Bool = true,
        code: String,
        tooLongCode: String? = nil,
        message: String? = nil
    ) throws(Failure) -> String {
        guard case .string(let text) = value else {
            throw .invalid(code, message ?? "\(field) must be a string", field: field)
        }
        guard allowEmpty || !text.isEmpty else {
            throw .invalid(code, "\(field) must not be empty", field: field)
        }
        guard text.utf8.count <= maximumBytes else {
            let message = "\(field) is \(text.utf8.count) bytes: send at most \(maximumBytes)"
            if let tooLongCode { throw .tooLarge(tooLongCode, message, field: field) }
            throw .invalid(code, message, field: field)
        }
        return text
    }

    /// A whole-number member in `range`; `nil` when absent or `null`. `3` and `3.0` are 3; `3.5`,
    /// `true` and `"3"` are refused.
    ///
    /// - Parameters:
    ///   - code: default `invalid_<key>`.
    ///   - message: what to send, the whole sentence; default "`key` must be a whole number from
    ///     `lower` to `upper`".
    public mutating func integer(
        _ key: String,
        in range: ClosedRange<Int64> = Int64.min...Int64.max,
        code: String? = nil,
        message: String? = nil
    ) throws(Failure) -> Int64? {
        guard let value = value(key) else { return nil }
        guard let number = Self.wholeNumber(value), range.contains(number) else {
            throw .invalid(
                code ?? "invalid_\(key)",
                message ?? "\(field(key)) must be a whole number from \(range.lowerBound) to \(range.upperBound)",
                field: field(key)
            )
        }
        return number
    }

    /// A number member in `range` (whole or not); `nil` when absent or `null`.
    public mutating func number(
        _ key: String,
        in range: ClosedRange<Double>,
        code: String? = nil,
        message: String? = nil
    ) throws(Failure) -> Double? {
        guard let value = value(key) else { return nil }
        let number: Double
        switch value {
        case .integer(let integer): number = Double(integer)
        case .double(let double): number = double
        default: number = .nan
        }
        guard range.contains(number) else {
            throw .invalid(
                code ?? "invalid_\(key)",
                message ?? "\(field(key)) must be a number from \(range.lowerBound) to \(range.upperBound)",
                field: field(key)
            )
        }
        return number
    }

    /// A `true` or `false` member; `nil` when absent or `null`. Numbers and strings are refused.
    public mutating func bool(_ key: String, code: String? = nil, message: String? = nil) throws(Failure) -> Bool? {
        guard let value = value(key) else { return nil }
        guard case .bool(let flag) = value else {
            throw .invalid(
                code ?? "invalid_\(key)",
                message ?? "\(field(key)) must be true or false",
                field: field(key)
            )
        }
        return flag
    }

    /// An object member, as a reader whose messages name `path.key.…`; `nil` when absent or `null`.
    /// Call ``finish()`` on it when its fields are read.
    ///
    /// - Parameters:
    ///   - what: what the object is, for its messages ("the audience").
    ///   - shape: what to send when it is not an object, e.g. `{"title": …, "body": …}`.
    ///   - code: default `invalid_<key>`.
    public mutating func object(
        _ key: String,
        what: String? = nil,
        shape: String,
        code: String? = nil
    ) throws(Failure) -> JSONObjectReader? {
        guard let value = value(key) else { return nil }
        return try Self.object(
            value,
            field: field(key),
            what: what ?? field(key),
            shape: shape,
            code: code ?? "invalid_\(key)"
        )
    }

    /// `value` as an object at `field`, read by a reader of its own.
    public static func object(
        _ value: JSONValue,
        field: String,
        what: String,
        shape: String,
        code: String
    ) throws(Failure) -> JSONObjectReader {
        guard case .object(let members) = value else {
            throw .invalid(code, "\(field) must be \(shape)", field: field)
        }
        return JSONObjectReader(members: members, path: field, what: what)
    }

    /// An array member; `nil` when absent or `null`. Its elements' paths are `field(key)[i]`.
    ///
    /// - Parameters:
    ///   - maximumCount: the most elements; more are refused with `tooManyCode` (default
    ///     `too_many_<key>`), as too large when `tooManyIsTooLarge`.
    ///   - code: for a value that is not an array; default `invalid_<key>`.
    public mutating func array(
        _ key: String,
        maximumCount: Int = .max,
        code: String? = nil,
        message: String? = nil,
        tooManyCode: String? = nil,
        tooManyIsTooLarge: Bool = false
    ) throws(Failure) -> [JSONValue]? {
        guard let value = value(key) else { return nil }
        guard case .array(let items) = value else {
            throw .invalid(
                code ?? "invalid_\(key)",
                message ?? "\(field(key)) must be an array",
                field: field(key)
            )
        }
        guard items.count <= maximumCount else {
            let refusal = Failure(
                tooManyIsTooLarge ? .tooLarge : .invalid,
                code: tooManyCode ?? "too_many_\(key)",
                message: "\(field(key)) has \(items.count) entries: send at most \(maximumCount)",
                field: field(key)
            )
            throw refusal
        }
        return items
    }

    /// An array of strings; `nil` when absent or `null`. Each element must be a string of at
    /// most `maximumBytes` (and not empty unless `allowEmpty`); `elementCode` (default
    /// `invalid_<key>`) names the element's path (`tags[2]`).
    public mutating func strings(
        _ key: String,
        maximumCount: Int = .max,
        maximumBytes: Int = .max,
        allowEmpty: Bool = false,
        code: String? = nil,
        elementCode: String? = nil
    ) throws(Failure) -> [String]? {
        let message = "\(field(key)) must be an array of strings"
        guard let items = try array(key, maximumCount: maximumCount, code: code, message: message) else { return nil }
        var strings: [String] = []
        strings.reserveCapacity(items.count)
        for (index, item) in items.enumerated() {
            strings.append(
                try Self.string(
                    item,
                    field: "\(field(key))[\(index)]",
                    maximumBytes: maximumBytes,
                    allowEmpty: allowEmpty,
                    code: elementCode ?? code ?? "invalid_\(key)"
                )
            )
        }
        return strings
    }

    // MARK: Unknown fields

    /// Refuses the first member (in key order) that was not read or asked for, as
    /// `unknown_field` naming it and listing the fields asked for.
    ///
    /// - Parameter hint: what to send instead of the list of fields, e.g. "use exactly one of
    ///   tokens, users, tags, all".
    public func finish(hint: String? = nil) throws(Failure) {
        try rejectUnknown(asked, hint: hint)
    }

    /// Refuses the first member (in key order) not in `known`, as `unknown_field`: for a body
    /// whose unknown fields are refused before any field is checked.
    public func rejectUnknown(_ known: Set<String>, hint: String? = nil) throws(Failure) {
        for key in members.keys.sorted() where !known.contains(key) {
            throw .unknownField(
                "\(Self.quoted(key)) is not a field of \(what): "
                    + (hint ?? "use \(known.sorted().joined(separator: ", "))"),
                field: field(key)
            )
        }
    }

    // MARK: Helpers

    /// A whole number: an integer, or a double with no fraction within ±2^53 (`1.0`). `1.5`,
    /// booleans and strings are not.
    public static func wholeNumber(_ value: JSONValue) -> Int64? {
        switch value {
        case .integer(let number): return number
        case .double(let number):
            guard number.rounded() == number, abs(number) <= 9_007_199_254_740_992 else { return nil }
            return Int64(number)
        default: return nil
        }
    }

    /// `"key"`, or "a field" for a key too long to quote.
    public static func quoted(_ key: String) -> String {
        key.utf8.count <= 64 ? "\"\(key)\"" : "a field"
    }
}

extension Refusal {
    /// `unknown_field`: a field the request may not have, here or with the rest of what it says
    /// (`data` for a schedule in CloudKit mode). ``JSONObjectReader`` refuses each field it was
    /// not asked for with it; the one place the code is spelled.
    public static func unknownField(_ message: String, field: String) -> Self {
        .invalid("unknown_field", message, field: field)
    }
}
