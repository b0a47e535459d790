import APNs
import Foundation
import HeraldCore

/// A record the simulator holds: its fields as `{"value", "type"}` pairs, a change tag and when it
/// was created (milliseconds, CloudKit's unit).
struct CloudKitStoredRecord: Sendable, Hashable {
    struct Field: Sendable, Hashable {
        var value: APNSJSONValue
        var type: String
    }

    var recordName: String
    var recordType: String
    var fields: [String: Field]
    var changeTag: String
    var createdMilliseconds: Int64
    /// Insertion order, to break ties in sorts.
    var sequence: Int

    /// The record as CloudKit answers it.
    var json: String {
        var writer = JSONObjectWriter()
        writer.string("recordName", recordName)
        writer.string("recordType", recordType)
        writer.string("recordChangeTag", changeTag)
        let fieldTexts = fields.sorted { $0.key < $1.key }.map { name, field in
            JSONText.quote(name)
                + #":{"value":\#(CloudKitJSON.text(field.value)),"type":\#(JSONText.quote(field.type))}"#
        }
        writer.raw("fields", "{" + fieldTexts.joined(separator: ",") + "}")
        let stamp = #"{"timestamp":\#(createdMilliseconds),"userRecordName":"_s2s","deviceID":"herald-simulator"}"#
        writer.raw("created", stamp)
        writer.raw("modified", stamp)
        writer.bool("deleted", false)
        return writer.json
    }

    /// The value a query compares and sorts by: a field, or the system field `___createTime`.
    func sortValue(_ fieldName: String) -> APNSJSONValue? {
        if fieldName == "___createTime" { return .integer(createdMilliseconds) }
        if fieldName == "___recordID" { return .string(recordName) }
        return fields[fieldName]?.value
    }
}

/// JSON text for the simulator's CloudKit answers.
enum CloudKitJSON {
    static func text(_ value: APNSJSONValue) -> String {
        switch value {
        case .null: return "null"
        case .bool(let flag): return flag ? "true" : "false"
        case .integer(let number): return String(number)
        case .double(let number): return number.isFinite ? String(number) : "null"
        case .string(let string): return JSONText.quote(string)
        case .array(let items): return "[" + items.map(text).joined(separator: ",") + "]"
        case .object(let members):
            let texts = members.sorted { $0.key < $1.key }.map { JSONText.quote($0.key) + ":" + text($0.value) }
            return "{" + texts.joined(separator: ",") + "}"
        }
    }

    /// CloudKit's error body: `{"uuid", "serverErrorCode", "reason"[, "retryAfter"]}`.
    static func error(code: String, reason: String, retryAfter: Int? = nil, recordName: String? = nil) -> String {
        var writer = JSONObjectWriter()
        if let recordName { writer.string("recordName", recordName) }
        writer.string("uuid", UUID().uuidString.lowercased())
        writer.string("serverErrorCode", code)
        writer.string("reason", reason)
        if let retryAfter { writer.integer("retryAfter", retryAfter) }
        return writer.json
    }

    /// Orders two field values: numbers by value, strings by bytes; nil when they cannot be
    /// compared (different kinds).
    static func compare(_ lhs: APNSJSONValue, _ rhs: APNSJSONValue) -> Int? {
        if let x = number(lhs), let y = number(rhs) { return x == y ? 0 : (x < y ? -1 : 1) }
        if case .string(let x) = lhs, case .string(let y) = rhs { return x == y ? 0 : (x < y ? -1 : 1) }
        if lhs == rhs { return 0 }
        return nil
    }

    static func number(_ value: APNSJSONValue) -> Double? {
        switch value {
        case .integer(let number): return Double(number)
        case .double(let number): return number
        default: return nil
        }
    }
}
