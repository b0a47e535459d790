import Foundation
import HeraldCore

extension CloudKitClient {
    /// CloudKit's limit of operations in one `records/modify` request.
    public static let maximumOperationsPerRequest = 200

    /// Creates one record (`records/modify`, operation `create`; CloudKit names it).
    ///
    /// - Throws: ``CloudKitError``: CloudKit's error for the request or for the record.
    public func createRecord(
        container: String,
        environment: CloudKitEnvironment,
        recordType: String,
        fields: [String: CloudKitValue]
    ) async throws(CloudKitError) -> CloudKitRecord {
        let subpath = try Self.subpath(container: container, environment: environment, operation: "modify")
        try Self.checkName(recordType, what: "record type")
        var fieldTexts: [String] = []
        for (name, value) in fields.sorted(by: { $0.key < $1.key }) {
            try Self.checkName(name, what: "field name")
            guard let json = value.json else {
                throw CloudKitError(.invalidConfiguration, reason: "field \(name) is not a finite number")
            }
            fieldTexts.append("\(JSONText.quote(name)):\(json)")
        }
        let body =
            #"{"operations":[{"operationType":"create","record":{"recordType":\#(JSONText.quote(recordType)),"fields":{"#
            + fieldTexts.joined(separator: ",") + "}}}]}"
        return try await retrying { () async throws(CloudKitError) -> CloudKitRecord in
            let answer = try await self.sendOnce(subpath, body: Array(body.utf8))
            let records = try CloudKitResponse.records(answer, status: 200)
            switch records.entries.first {
            case .record(let record)?: return record
            case .failure(let failure)?: throw failure
            case nil:
                throw CloudKitError(.invalidResponse, reason: "CloudKit answered the create without a record")
            }
        }
    }

    /// Reads one page of records of `recordType` (`records/query`), sorted by `sortBy` when given.
    ///
    /// - Parameters:
    ///   - continuationMarker: the previous page's marker, to read the next one.
    ///   - limit: records per page, 1 to 200; nil: CloudKit's default.
    public func queryRecords(
        container: String,
        environment: CloudKitEnvironment,
        recordType: String,
        sortBy: String? = nil,
        ascending: Bool = true,
        continuationMarker: String? = nil,
        limit: Int? = nil
    ) async throws(CloudKitError) -> CloudKitQueryPage {
        let subpath = try Self.subpath(container: container, environment: environment, operation: "query")
        try Self.checkName(recordType, what: "record type")
        var query = #""recordType":\#(JSONText.quote(recordType))"#
        if let sortBy {
            try Self.checkName(sortBy, what: "sort field")
            query += #","sortBy":[{"fieldName":\#(JSONText.quote(sortBy)),"ascending":\#(ascending)}]"#
        }
        var body = #"{"query":{\#(query)}"#
        if let limit {
            guard (1...200).contains(limit) else {
                throw CloudKitError(.invalidConfiguration, reason: "a query limit must be from 1 to 200, not \(limit)")
            }
            body += #","resultsLimit":\#(limit)"#
        }
        if let continuationMarker { body += #","continuationMarker":\#(JSONText.quote(continuationMarker))"# }
        body += "}"
        let answer = try await post(subpath, body: Array(body.utf8))
        let records = try CloudKitResponse.records(answer, status: 200)
        var page = CloudKitQueryPage(records: [], continuationMarker: records.continuationMarker)
        for entry in records.entries {
            switch entry {
            case .record(let record): page.records.append(record)
            case .failure(let failure): throw failure
            }
        }
        return page
    }

    /// Deletes records by name with `forceDelete`, at most ``maximumOperationsPerRequest`` per
    /// request. A record that is already gone (`NOT_FOUND`) counts as deleted.
    ///
    /// - Returns: how many were deleted.
    /// - Throws: ``CloudKitError``: the first request or record that failed (earlier requests'
    ///   deletions stand).
    @discardableResult
    public func deleteRecords(
        container: String,
        environment: CloudKitEnvironment,
        recordNames: [String]
    ) async throws(CloudKitError) -> Int {
        let subpath = try Self.subpath(container: container, environment: environment, operation: "modify")
        var deleted = 0
        var start = 0
        while start < recordNames.count {
            let batch = recordNames[start..<min(start + Self.maximumOperationsPerRequest, recordNames.count)]
            start += batch.count
            let operations = batch.map { name in
                #"{"operationType":"forceDelete","record":{"recordName":\#(JSONText.quote(name))}}"#
            }
            let body = #"{"operations":["# + operations.joined(separator: ",") + "]}"
            let answer = try await post(subpath, body: Array(body.utf8))
            for entry in try CloudKitResponse.records(answer, status: 200).entries {
                switch entry {
                case .record: deleted += 1
                case .failure(let failure) where failure.code == .notFound: deleted += 1
                case .failure(let failure): throw failure
                }
            }
        }
        return deleted
    }

    /// Deletes every record of `recordType` but the newest `keep` by `sortField`: queries newest
    /// first, following `continuationMarker`, then deletes the rest.
    ///
    /// - Returns: how many were deleted.
    public func cleanup(
        container: String,
        environment: CloudKitEnvironment,
        recordType: String,
        sortField: String,
        keep: Int
    ) async throws(CloudKitError) -> Int {
        guard keep >= 0 else {
            throw CloudKitError(.invalidConfiguration, reason: "keep must be 0 or more, not \(keep)")
        }
        var names: [String] = []
        var seen = 0
        var marker: String?
        repeat {
            let page = try await queryRecords(
                container: container,
                environment: environment,
                recordType: recordType,
                sortBy: sortField,
                ascending: false,
                continuationMarker: marker,
                limit: 200
            )
            for record in page.records {
                seen += 1
                if seen > keep { names.append(record.recordName) }
            }
            marker = page.continuationMarker
        } while marker != nil
        guard !names.isEmpty else { return 0 }
        return try await deleteRecords(container: container, environment: environment, recordNames: names)
    }

    /// Record types and field names: a letter, then letters, digits and `_`, 255 bytes at most.
    static func checkName(_ name: String, what: String) throws(CloudKitError) {
        let bytes = Array(name.utf8)
        guard let first = bytes.first, bytes.count <= 255,
            (65...90).contains(first) || (97...122).contains(first),
            bytes.allSatisfy({ (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) || $0 == 95 }
            )
        else {
            throw CloudKitError(
                .invalidConfiguration,
                reason: "'\(name.prefix(100))' is not a \(what): start with a letter, then letters, digits and _"
            )
        }
    }
}
