import APNs
import Foundation
import HeraldCore

/// Reads the control API's CloudKit bodies, strictly: unknown fields are errors.
enum CloudKitControlInput {
    /// `{"container", "environment"?, "record_type", "tokens": [...], "topic", "id"?}`.
    static func subscription(
        _ body: [UInt8],
        limits: CloudKitEndpoint.Limits
    ) -> Result<APNSSimulatorCloudKitSubscription, ControlInputError> {
        guard let object = (try? APNSJSONValue(parsing: body))?.objectValue else {
            return .failure(ControlInputError(field: nil, message: "The body must be a JSON object."))
        }
        let known = ["id", "container", "environment", "record_type", "tokens", "topic"]
        if let unknown = object.keys.sorted().first(where: { !known.contains($0) }) {
            return .failure(
                ControlInputError(
                    field: unknown,
                    message: "\(unknown) is not a field of a subscription: use \(known.joined(separator: ", "))."
                )
            )
        }
        guard let container = object["container"]?.stringValue, container.hasPrefix("iCloud."),
            container.utf8.count <= 255
        else {
            return .failure(
                ControlInputError(
                    field: "container",
                    message: "container must be a container id such as iCloud.com.example.app."
                )
            )
        }
        var environment: String?
        if let value = object["environment"], value != .null {
            guard let text = value.stringValue, text == "production" || text == "development" else {
                return .failure(
                    ControlInputError(field: "environment", message: "environment must be production or development.")
                )
            }
            environment = text
        }
        guard let recordType = object["record_type"]?.stringValue, !recordType.isEmpty,
            recordType.utf8.count <= limits.nameBytes
        else {
            return .failure(
                ControlInputError(
                    field: "record_type",
                    message: "record_type must be the record type, 1 to \(limits.nameBytes) bytes."
                )
            )
        }
        guard case .array(let items)? = object["tokens"], !items.isEmpty, items.count <= limits.tokensPerSubscription
        else {
            return .failure(
                ControlInputError(
                    field: "tokens",
                    message: "tokens must list 1 to \(limits.tokensPerSubscription) device tokens."
                )
            )
        }
        var tokens: [String] = []
        for item in items {
            guard let token = item.stringValue, HeaderRules.isWellFormedDeviceToken(token) else {
                return .failure(
                    ControlInputError(field: "tokens", message: "each token must be 64 to 200 hexadecimal characters.")
                )
            }
            tokens.append(token)
        }
        guard let topic = object["topic"]?.stringValue, HeaderRules.isWellFormedTopic(topic) else {
            return .failure(
                ControlInputError(
                    field: "topic",
                    message: "topic must be the app's bundle ID, such as com.example.app."
                )
            )
        }
        var id = UUID().uuidString
        if let value = object["id"] {
            guard let text = value.stringValue, !text.isEmpty, text.utf8.count <= 128 else {
                return .failure(ControlInputError(field: "id", message: "id must be 1 to 128 characters."))
            }
            id = text
        }
        return .success(
            APNSSimulatorCloudKitSubscription(
                id: id,
                container: container,
                environment: environment,
                recordType: recordType,
                tokens: tokens,
                topic: topic
            )
        )
    }

    /// `{"server_error_code": "THROTTLED", "status"?, "retry_after"?, "times"?, "operation"?}`.
    static func fault(_ body: [UInt8]) -> Result<APNSSimulatorCloudKitFault, ControlInputError> {
        guard let object = (try? APNSJSONValue(parsing: body))?.objectValue else {
            return .failure(ControlInputError(field: nil, message: "The body must be a JSON object."))
        }
        let known = ["server_error_code", "status", "retry_after", "times", "operation"]
        if let unknown = object.keys.sorted().first(where: { !known.contains($0) }) {
            return .failure(
                ControlInputError(
                    field: unknown,
                    message: "\(unknown) is not a field of a CloudKit fault: use \(known.joined(separator: ", "))."
                )
            )
        }
        guard let code = object["server_error_code"]?.stringValue, !code.isEmpty, code.utf8.count <= 64,
            code.utf8.allSatisfy({ (65...90).contains($0) || $0 == 95 })
        else {
            return .failure(
                ControlInputError(
                    field: "server_error_code",
                    message: "server_error_code must be a CloudKit code such as THROTTLED."
                )
            )
        }
        func integer(_ key: String, _ range: ClosedRange<Int64>) -> Result<Int?, ControlInputError> {
            switch object[key] {
            case nil, .null?: return .success(nil)
            case .integer(let number)? where range.contains(number): return .success(Int(number))
            default:
                return .failure(
                    ControlInputError(
                        field: key,
                        message: "\(key) must be a whole number from \(range.lowerBound) to \(range.upperBound)."
                    )
                )
            }
        }
        let defaults = ["THROTTLED": 429, "TRY_AGAIN_LATER": 503, "INTERNAL_ERROR": 500, "AUTHENTICATION_FAILED": 401]
        let status: Int
        let retryAfter: Int?
        let times: Int?
        switch (integer("status", 400...599), integer("retry_after", 0...3600), integer("times", 1...1_000_000)) {
        case (.success(let s), .success(let r), .success(let t)):
            status = s ?? defaults[code] ?? 400
            retryAfter = r
            times = t
        case (.failure(let error), _, _), (_, .failure(let error), _), (_, _, .failure(let error)):
            return .failure(error)
        }
        var operation: String?
        if let value = object["operation"], value != .null {
            guard let text = value.stringValue, text == "modify" || text == "query" else {
                return .failure(ControlInputError(field: "operation", message: "operation must be modify or query."))
            }
            operation = text
        }
        return .success(
            APNSSimulatorCloudKitFault(
                serverErrorCode: code,
                status: status,
                retryAfter: retryAfter,
                times: times,
                operation: operation
            )
        )
    }
}
