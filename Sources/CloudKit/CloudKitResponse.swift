import Foundation
import HeraldCore

/// Reads CloudKit's JSON answers: error bodies (`serverErrorCode`, `reason`, `retryAfter`,
/// `uuid`) and `records` arrays whose entries are records or per-record errors. The input is
/// untrusted: it is read with the one strict JSON grammar, nesting at most 64 deep.
enum CloudKitResponse {
    /// One entry of `records`.
    enum Entry: Sendable, Hashable {
        case record(CloudKitRecord)
        case failure(CloudKitError)
    }

    /// The parsed body of a 2xx answer.
    struct Records: Sendable, Hashable {
        var entries: [Entry]
        var continuationMarker: String?
    }

    /// The top-level JSON object of `body`, or nil when it is not one.
    static func object(_ body: [UInt8]) -> [String: JSONValue]? {
        (try? JSONValue.parse(body, maximumDepth: 64))?.objectValue
    }

    /// A 2xx body with `records` (and a `continuationMarker` for queries).
    static func records(_ body: [UInt8], status: Int) throws(CloudKitError) -> Records {
        guard let object = object(body) else {
            throw CloudKitError(
                .invalidResponse,
                reason: "CloudKit answered HTTP \(status) with a body that is not a JSON object: check CLOUDKIT_URL",
                status: status
            )
        }
        guard case .array(let list)? = object["records"] else {
            throw CloudKitError(
                .invalidResponse,
                reason: "CloudKit answered HTTP \(status) without a records array: check CLOUDKIT_URL",
                status: status
            )
        }
        var entries: [Entry] = []
        entries.reserveCapacity(list.count)
        for item in list {
            guard let fields = item.objectValue else {
                throw CloudKitError(.invalidResponse, reason: "a records entry is not a JSON object", status: status)
            }
            if let failure = error(fields, status: status) {
                entries.append(.failure(failure))
            } else if let record = CloudKitRecord(json: fields) {
                entries.append(.record(record))
            } else {
                throw CloudKitError(.invalidResponse, reason: "a records entry has no recordName", status: status)
            }
        }
        return Records(entries: entries, continuationMarker: object["continuationMarker"]?.stringValue)
    }

    /// The error a non-2xx answer carries, in CloudKit's shape when it has one.
    static func failure(_ body: [UInt8], status: Int) -> CloudKitError {
        if let object = object(body), let failure = error(object, status: status) { return failure }
        let code: CloudKitError.Code =
            switch status {
            case 401: .authenticationFailed
            case 403: .accessDenied
            case 404: .notFound
            case 409: .conflict
            case 413: .quotaExceeded
            case 429: .throttled
            case 503: .tryAgainLater
            case 500..<600: .internalError
            default: .badRequest
            }
        return CloudKitError(code, reason: "CloudKit answered HTTP \(status) without an error body", status: status)
    }

    /// `serverErrorCode` and its companions, when `object` has one.
    private static func error(_ object: [String: JSONValue], status: Int) -> CloudKitError? {
        guard let code = object["serverErrorCode"]?.stringValue, !code.isEmpty else { return nil }
        var retryAfter: Duration?
        if let seconds = object["retryAfter"]?.numberValue, seconds >= 0 {
            retryAfter = .milliseconds(Int64(min(seconds, 86_400) * 1000))
        }
        return CloudKitError(
            CloudKitError.Code(String(code.prefix(64))),
            reason: String((object["reason"]?.stringValue ?? "no reason given").prefix(500)),
            status: status,
            retryAfter: retryAfter,
            recordName: object["recordName"]?.stringValue.map { String($0.prefix(255)) },
            uuid: object["uuid"]?.stringValue.map { String($0.prefix(64)) }
        )
    }
}

extension CloudKitClient {
    /// How the client reads an answer of `status` with `body` (untrusted input): the records and
    /// marker of a 2xx answer (a per-record error becomes the failure), or the error of another.
    /// Public for the fuzz harness and for tools that replay saved answers.
    public static func readAnswer(_ body: [UInt8], status: Int) -> Result<CloudKitQueryPage, CloudKitError> {
        guard (200..<300).contains(status) else { return .failure(CloudKitResponse.failure(body, status: status)) }
        do {
            let records = try CloudKitResponse.records(body, status: status)
            var page = CloudKitQueryPage(records: [], continuationMarker: records.continuationMarker)
            for entry in records.entries {
                switch entry {
                case .record(let record): page.records.append(record)
                case .failure(let failure): return .failure(failure)
                }
            }
            return .success(page)
        } catch {
            return .failure(error)
        }
    }
}
