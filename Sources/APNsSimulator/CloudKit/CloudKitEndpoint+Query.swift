import APNs
import Foundation
import HTTP2
import HeraldCore
import Synchronization

extension CloudKitEndpoint {
    private static let queryKeys: Set<String> = [
        "query", "resultsLimit", "continuationMarker", "desiredKeys", "zoneID", "zoneWide", "numbersAsStrings",
    ]
    private static let comparators: Set<String> = [
        "EQUALS", "NOT_EQUALS", "LESS_THAN", "LESS_THAN_OR_EQUALS", "GREATER_THAN", "GREATER_THAN_OR_EQUALS",
    ]

    /// One filter of `filterBy`.
    private struct Filter {
        var field: String
        var comparator: String
        var value: APNSJSONValue

        func matches(_ record: CloudKitStoredRecord) -> Bool {
            let order = record.sortValue(field).flatMap { CloudKitJSON.compare($0, value) }
            switch comparator {
            case "EQUALS": return order == 0
            case "NOT_EQUALS": return order != 0
            case "LESS_THAN": return order == -1
            case "LESS_THAN_OR_EQUALS": return order == -1 || order == 0
            case "GREATER_THAN": return order == 1
            default: return order == 1 || order == 0
            }
        }
    }

    /// Answers `records/query`: filters, sorts (insertion order last), then one page of
    /// `resultsLimit` (default 100) from the `continuationMarker`'s offset.
    func query(_ object: [String: APNSJSONValue], database: String) -> HTTP2ServerResponse {
        if let unknown = object.keys.sorted().first(where: { !Self.queryKeys.contains($0) }) {
            return Self.error(400, "BAD_REQUEST", "unknown field '\(unknown.prefix(40))' in records/query")
        }
        guard let query = object["query"]?.objectValue, let recordType = query["recordType"]?.stringValue else {
            return Self.error(400, "BAD_REQUEST", "query.recordType is required")
        }
        if let unknown = query.keys.sorted().first(where: { !["recordType", "filterBy", "sortBy"].contains($0) }) {
            return Self.error(400, "BAD_REQUEST", "unknown field 'query.\(unknown.prefix(40))'")
        }
        var limit = 100
        if let value = object["resultsLimit"] {
            guard case .integer(let number) = value, (1...Int64(limits.results)).contains(number) else {
                return Self.error(400, "BAD_REQUEST", "resultsLimit must be a whole number from 1 to \(limits.results)")
            }
            limit = Int(number)
        }
        var filters: [Filter] = []
        if let value = query["filterBy"] {
            guard case .array(let items) = value, items.count <= limits.filters else {
                return Self.error(400, "BAD_REQUEST", "filterBy must be an array of at most \(limits.filters) filters")
            }
            for item in items {
                guard let field = item["fieldName"]?.stringValue, let comparator = item["comparator"]?.stringValue,
                    Self.comparators.contains(comparator), let fieldValue = item["fieldValue"]?["value"]
                else {
                    return Self.error(
                        400,
                        "BAD_REQUEST",
                        "each filter needs fieldName, comparator (EQUALS, NOT_EQUALS, LESS_THAN, …) and fieldValue.value"
                    )
                }
                filters.append(Filter(field: field, comparator: comparator, value: fieldValue))
            }
        }
        var sorts: [(field: String, ascending: Bool)] = []
        if let value = query["sortBy"] {
            guard case .array(let items) = value, items.count <= limits.sorts else {
                return Self.error(400, "BAD_REQUEST", "sortBy must be an array of at most \(limits.sorts) sorts")
            }
            for item in items {
                guard let field = item["fieldName"]?.stringValue else {
                    return Self.error(400, "BAD_REQUEST", "each sortBy entry needs fieldName")
                }
                var ascending = true
                if let flag = item["ascending"] {
                    guard case .bool(let value) = flag else {
                        return Self.error(400, "BAD_REQUEST", "sortBy.ascending must be true or false")
                    }
                    ascending = value
                }
                sorts.append((field, ascending))
            }
        }
        var offset = 0
        if let value = object["continuationMarker"] {
            guard let text = value.stringValue, let parsed = Self.offset(marker: text) else {
                return Self.error(400, "BAD_REQUEST", "continuationMarker is not one this server gave")
            }
            offset = parsed
        }
        let records = state.withLock { state in
            (state.databases[database] ?? [:]).values.filter { $0.recordType == recordType }
        }
        let sorted = records.filter { record in filters.allSatisfy { $0.matches(record) } }.sorted { lhs, rhs in
            for sort in sorts {
                switch (lhs.sortValue(sort.field), rhs.sortValue(sort.field)) {
                case (let a?, let b?):
                    if let order = CloudKitJSON.compare(a, b), order != 0 { return (order < 0) == sort.ascending }
                case (nil, .some): return false  // A record without the field sorts last.
                case (.some, nil): return true
                case (nil, nil): break
                }
            }
            return lhs.sequence < rhs.sequence
        }
        let page = sorted.dropFirst(offset).prefix(limit)
        var json = #"{"records":["# + page.map(\.json).joined(separator: ",") + "]"
        if offset + page.count < sorted.count {
            json += #","continuationMarker":\#(JSONText.quote(Self.marker(offset: offset + page.count)))"#
        }
        return Self.ok(json + "}")
    }

    /// An opaque marker for the next page: base64 of `herald-ck:<offset>`.
    static func marker(offset: Int) -> String {
        Data("herald-ck:\(offset)".utf8).base64EncodedString()
    }

    static func offset(marker: String) -> Int? {
        guard marker.utf8.count <= 64, let data = Data(base64Encoded: marker),
            let text = String(data: data, encoding: .utf8), text.hasPrefix("herald-ck:"),
            let offset = Int(text.dropFirst(10)), offset >= 0
        else { return nil }
        return offset
    }
}
