import HeraldCore

extension JSONValue {
    /// The elements when this is an array.
    var arrayValue: [JSONValue]? {
        if case .array(let elements) = self { return elements }
        return nil
    }

    /// How a cell shows it: a string as it is, a number without a needless `.0`, `yes`/`no`,
    /// `nil` for null, an object or array as compact JSON.
    var display: String? {
        switch self {
        case .null: return nil
        case .bool(let value): return value ? "yes" : "no"
        case .integer(let value): return String(value)
        case .double(let value):
            return value.rounded() == value && abs(value) < 1e15 ? String(Int64(value)) : String(value)
        case .string(let value): return value
        case .array, .object: return compactText
        }
    }

    /// The value as JSON text, keys sorted.
    var compactText: String {
        var bytes: [UInt8] = []
        try? write(to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }
}
