public import Foundation
import HeraldCore

/// A record field's value, in the types Herald writes and reads (CloudKit's Types reference):
/// `STRING`, `INT64`, `DOUBLE` and `TIMESTAMP` (milliseconds since 1970 on the wire).
public enum CloudKitValue: Sendable, Hashable {
    case string(String)
    case int64(Int64)
    case double(Double)
    case timestamp(Date)

    /// `{"value": …}`, with `"type": "TIMESTAMP"` for dates. Non-finite doubles have no JSON form.
    var json: String? {
        switch self {
        case .string(let text): return #"{"value":\#(JSONText.quote(text))}"#
        case .int64(let number): return #"{"value":\#(number)}"#
        case .double(let number): return number.isFinite ? #"{"value":\#(number)}"# : nil
        case .timestamp(let date):
            return #"{"value":\#(Int64((date.timeIntervalSince1970 * 1000).rounded(.down))),"type":"TIMESTAMP"}"#
        }
    }

    /// A field as CloudKit answers it (`{"value": …, "type": …}`); nil for types Herald does not
    /// read (assets, references, lists, locations, bytes).
    init?(field: JSONValue) {
        guard let value = field["value"] else { return nil }
        switch (field["type"]?.stringValue, value) {
        case ("TIMESTAMP", .integer(let milliseconds)):
            self = .timestamp(Date(timeIntervalSince1970: Double(milliseconds) / 1000))
        case ("TIMESTAMP", .double(let milliseconds)):
            self = .timestamp(Date(timeIntervalSince1970: milliseconds / 1000))
        case ("DOUBLE", .integer(let number)):
            self = .double(Double(number))
        case ("DOUBLE", .double(let number)), (nil, .double(let number)), ("INT64", .double(let number)):
            self = .double(number)
        case (nil, .integer(let number)), ("INT64", .integer(let number)):
            self = .int64(number)
        case (nil, .string(let text)), ("STRING", .string(let text)):
            self = .string(text)
        default:
            return nil
        }
    }
}

/// A record of the public database, as CloudKit answered it.
public struct CloudKitRecord: Sendable, Hashable {
    public var recordName: String
    public var recordType: String
    /// The change tag CloudKit assigned (needed by `update`/`delete`; `forceDelete` does not use it).
    public var recordChangeTag: String?
    /// The fields Herald can read (see ``CloudKitValue``).
    public var fields: [String: CloudKitValue]
    /// `created.timestamp`, when given.
    public var createdAt: Date?

    public init(
        recordName: String,
        recordType: String,
        recordChangeTag: String? = nil,
        fields: [String: CloudKitValue] = [:],
        createdAt: Date? = nil
    ) {
        self.recordName = recordName
        self.recordType = recordType
        self.recordChangeTag = recordChangeTag
        self.fields = fields
        self.createdAt = createdAt
    }

    /// Reads one entry of an answer's `records`; nil when it has no `recordName`.
    init?(json object: [String: JSONValue]) {
        guard let name = object["recordName"]?.stringValue else { return nil }
        recordName = name
        recordType = object["recordType"]?.stringValue ?? ""
        recordChangeTag = object["recordChangeTag"]?.stringValue
        var fields: [String: CloudKitValue] = [:]
        for (key, value) in object["fields"]?.objectValue ?? [:] {
            if let parsed = CloudKitValue(field: value) { fields[key] = parsed }
        }
        self.fields = fields
        if let milliseconds = object["created"]?["timestamp"]?.numberValue {
            createdAt = Date(timeIntervalSince1970: milliseconds / 1000)
        }
    }
}

/// One page of a `records/query` answer.
public struct CloudKitQueryPage: Sendable, Hashable {
    public var records: [CloudKitRecord]
    /// Pass it back to read the next page; nil on the last page.
    public var continuationMarker: String?

    public init(records: [CloudKitRecord], continuationMarker: String?) {
        self.records = records
        self.continuationMarker = continuationMarker
    }
}

/// The CloudKit environment of a container.
public enum CloudKitEnvironment: String, Sendable, Hashable, CaseIterable {
    case production
    case development
}
