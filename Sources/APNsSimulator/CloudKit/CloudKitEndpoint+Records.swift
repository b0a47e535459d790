import APNs
import Foundation
import HTTP2
import HeraldCore
import Synchronization

extension CloudKitEndpoint {
    private static let modifyKeys: Set<String> = ["operations", "zoneID", "atomic", "desiredKeys", "numbersAsStrings"]

    private func isName(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard let first = bytes.first, bytes.count <= limits.nameBytes else { return false }
        return first != 95
            && bytes.allSatisfy { byte in
                (48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte) || byte == 95
            }
    }

    private static func zoneFailure(_ object: [String: APNSJSONValue]) -> HTTP2ServerResponse? {
        guard let zone = object["zoneID"] else { return nil }
        guard zone["zoneName"]?.stringValue == "_defaultZone" else {
            return error(404, "ZONE_NOT_FOUND", "the public database has one zone, _defaultZone")
        }
        return nil
    }

    // MARK: records/modify

    /// Runs `create`, `delete` and `forceDelete` operations; others get a per-record BAD_REQUEST.
    func modify(
        _ object: [String: APNSJSONValue],
        database: String,
        now: Date
    ) -> (HTTP2ServerResponse, [SubscriptionPush]) {
        if let unknown = object.keys.sorted().first(where: { !Self.modifyKeys.contains($0) }) {
            return (Self.error(400, "BAD_REQUEST", "unknown field '\(unknown.prefix(40))' in records/modify"), [])
        }
        if let failure = Self.zoneFailure(object) { return (failure, []) }
        guard case .array(let operations)? = object["operations"], !operations.isEmpty else {
            return (Self.error(400, "BAD_REQUEST", "operations must be a non-empty array"), [])
        }
        guard operations.count <= limits.operations else {
            return (
                Self.error(
                    400,
                    "BAD_REQUEST",
                    "at most \(limits.operations) operations per request, not \(operations.count)"
                ), []
            )
        }
        var parsed: [(type: String, record: [String: APNSJSONValue])] = []
        for operation in operations {
            guard let fields = operation.objectValue, let type = fields["operationType"]?.stringValue,
                let record = fields["record"]?.objectValue
            else {
                return (Self.error(400, "BAD_REQUEST", "each operation needs operationType and a record object"), [])
            }
            parsed.append((type, record))
        }
        let creates = parsed.filter { $0.type == "create" }.count
        return state.withLock { state in
            guard state.recordCount + creates <= state.recordLimit else {
                return (
                    Self.error(
                        413,
                        "QUOTA_EXCEEDED",
                        "the simulator holds at most \(state.recordLimit) records: delete some, or DELETE /cloudkit/records on the control API"
                    ),
                    []
                )
            }
            var entries: [String] = []
            var pushes: [SubscriptionPush] = []
            let parts = database.split(separator: "/").map(String.init)
            for (type, record) in parsed {
                let name = record["recordName"]?.stringValue
                switch type {
                case "create":
                    switch newRecord(record, database: database, state: &state, now: now) {
                    case .success(let stored):
                        state.databases[database, default: [:]][stored.recordName] = stored
                        state.recordCount += 1
                        entries.append(stored.json)
                        for subscription in state.subscriptions(
                            container: parts[0],
                            environment: parts[1],
                            recordType: stored.recordType
                        ) {
                            pushes.append(SubscriptionPush(subscription: subscription, recordName: stored.recordName))
                        }
                    case .failure(let failure):
                        entries.append(failure.json)
                    }
                case "delete", "forceDelete":
                    guard let name else {
                        entries.append(
                            CloudKitJSON.error(code: "BAD_REQUEST", reason: "\(type) needs record.recordName")
                        )
                        continue
                    }
                    if state.databases[database]?.removeValue(forKey: name) != nil {
                        state.recordCount -= 1
                        entries.append(#"{"recordName":\#(JSONText.quote(name)),"deleted":true}"#)
                    } else {
                        entries.append(
                            CloudKitJSON.error(code: "NOT_FOUND", reason: "record not found", recordName: name)
                        )
                    }
                default:
                    entries.append(
                        CloudKitJSON.error(
                            code: "BAD_REQUEST",
                            reason:
                                "operationType '\(type.prefix(40))' is not supported by the simulator (create, delete, forceDelete)",
                            recordName: name
                        )
                    )
                }
            }
            return (Self.ok(#"{"records":["# + entries.joined(separator: ",") + "]}"), pushes)
        }
    }

    /// A record to create, or its per-record error (JSON text).
    private func newRecord(
        _ record: [String: APNSJSONValue],
        database: String,
        state: inout CloudKitSimulatorState,
        now: Date
    ) -> Result<CloudKitStoredRecord, CloudKitRecordError> {
        let name = record["recordName"]?.stringValue ?? UUID().uuidString
        func failure(_ code: String, _ reason: String) -> Result<CloudKitStoredRecord, CloudKitRecordError> {
            .failure(CloudKitRecordError(json: CloudKitJSON.error(code: code, reason: reason, recordName: name)))
        }
        guard name.utf8.count <= limits.nameBytes, !name.isEmpty else {
            return failure("BAD_REQUEST", "recordName must be 1 to \(limits.nameBytes) bytes")
        }
        guard let type = record["recordType"]?.stringValue, isName(type) else {
            return failure(
                "BAD_REQUEST",
                "recordType must be a name of letters, digits and _ (at most \(limits.nameBytes) bytes)"
            )
        }
        let fieldObjects = record["fields"]?.objectValue ?? [:]
        guard fieldObjects.count <= limits.fields else {
            return failure("BAD_REQUEST", "a record has at most \(limits.fields) fields in the simulator")
        }
        var fields: [String: CloudKitStoredRecord.Field] = [:]
        for (fieldName, field) in fieldObjects {
            guard isName(fieldName) else {
                return failure("BAD_REQUEST", "field name '\(fieldName.prefix(40))' is not letters, digits and _")
            }
            guard let value = field["value"] else {
                return failure("BAD_REQUEST", "field \(fieldName) needs {\"value\": …}")
            }
            let inferred: String? =
                switch value {
                case .string: "STRING"
                case .integer: "INT64"
                case .double: "DOUBLE"
                case .array: "LIST"
                default: nil
                }
            guard let type = field["type"]?.stringValue ?? inferred else {
                return failure("BAD_REQUEST", "field \(fieldName) needs a type for this value")
            }
            fields[fieldName] = CloudKitStoredRecord.Field(value: value, type: type)
        }
        if state.databases[database]?[name] != nil {
            return failure("EXISTS", "a record named \(name) already exists")
        }
        let sequence = state.nextSequence
        state.nextSequence += 1
        return .success(
            CloudKitStoredRecord(
                recordName: name,
                recordType: type,
                fields: fields,
                changeTag: String(sequence, radix: 36),
                createdMilliseconds: Int64((now.timeIntervalSince1970 * 1000).rounded(.down)),
                sequence: sequence
            )
        )
    }
}

/// A per-record error entry of a modify answer.
struct CloudKitRecordError: Error, Sendable {
    var json: String
}
