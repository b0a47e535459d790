import APNs
import Foundation
import HTTPRouting
import HeraldCore

/// A control API request that cannot be done as sent; becomes a 400 in the API's error shape.
struct ControlInputError: Error, Sendable {
    var field: String?
    var message: String

    var response: HTTPResponse {
        .error(status: 400, code: "invalid_request", message: message, field: field)
    }
}

/// Reads the control API's request bodies.
enum ControlInput {
    /// `{"token": "…", "topic": "…"?, "unregistered_at": …?}`.
    ///
    /// `unregistered_at` is an RFC 3339 time, `"now"`, or a number of seconds since 1970 (a number
    /// of 10^11 or more is read as milliseconds, the unit of APNs' own `timestamp`).
    static func tokenState(_ body: [UInt8], now: Date) -> Result<APNSSimulatorTokenState, ControlInputError> {
        let object: [String: APNSJSONValue]
        switch jsonObject(body) {
        case .success(let parsed): object = parsed
        case .failure(let error): return .failure(error)
        }
        if let unknown = object.keys.first(where: { !["token", "topic", "unregistered_at"].contains($0) }) {
            return .failure(
                ControlInputError(
                    field: unknown,
                    message: "\(unknown) is not a field of a token: use token, topic, unregistered_at."
                )
            )
        }
        guard let token = object["token"]?.stringValue, HeaderRules.isWellFormedDeviceToken(token) else {
            return .failure(
                ControlInputError(
                    field: "token",
                    message: "token must be the device token: 64 to 200 hexadecimal characters."
                )
            )
        }
        var topic: String?
        switch object["topic"] {
        case nil, .null?:
            break
        case .string(let text)? where HeaderRules.isWellFormedTopic(text):
            topic = text
        default:
            return .failure(
                ControlInputError(
                    field: "topic",
                    message: "topic must be a bundle ID or an apns-topic, such as com.example.app."
                )
            )
        }
        var unregisteredAt: Date?
        switch object["unregistered_at"] {
        case nil, .null?:
            break
        case .string("now")?:
            unregisteredAt = now
        case .string(let text)?:
            guard let date = RFC3339.date(from: text) else {
                return .failure(unregisteredError)
            }
            unregisteredAt = date
        case .integer(let number)?:
            unregisteredAt = date(number: Double(number))
        case .double(let number)? where number.isFinite:
            unregisteredAt = date(number: number)
        default:
            return .failure(unregisteredError)
        }
        return .success(APNSSimulatorTokenState(token: token, topic: topic, unregisteredAt: unregisteredAt))
    }

    private static let unregisteredError = ControlInputError(
        field: "unregistered_at",
        message: "unregistered_at must be an RFC 3339 time, \"now\", or seconds since 1970."
    )

    private static func date(number: Double) -> Date {
        number >= 1e11 ? Date(timeIntervalSince1970: number / 1000) : Date(timeIntervalSince1970: number)
    }

    /// A fault, by `type`:
    ///
    /// - `{"type":"status","status":500,"reason":"InternalServerError"}` (reason defaults for 410,
    ///   429, 500, 503);
    /// - `{"type":"latency","latency_ms":250}`;
    /// - `{"type":"goaway","after_streams":10,"reason":"Shutdown","error_code":0}`;
    /// - `{"type":"close","after_streams":1}`;
    ///
    /// `status` and `latency` also take `every`, `token`, `times` and `applies_to`.
    static func fault(_ body: [UInt8]) -> Result<APNSSimulatorFault, ControlInputError> {
        let object: [String: APNSJSONValue]
        switch jsonObject(body) {
        case .success(let parsed): object = parsed
        case .failure(let error): return .failure(error)
        }
        func integer(_ key: String, in range: ClosedRange<Int64>) throws(ControlInputError) -> Int? {
            switch object[key] {
            case nil, .null?: return nil
            case .integer(let value)? where range.contains(value): return Int(value)
            default:
                throw ControlInputError(
                    field: key,
                    message: "\(key) must be a whole number from \(range.lowerBound) to \(range.upperBound)."
                )
            }
        }
        func reason(default fallback: APNSErrorReason?) throws(ControlInputError) -> APNSErrorReason {
            switch object["reason"] {
            case .string(let text)? where !text.isEmpty && text.utf8.count <= 100:
                return APNSErrorReason(rawValue: text)
            case nil where fallback != nil, .null? where fallback != nil: return fallback!
            default:
                throw ControlInputError(
                    field: "reason",
                    message: "reason must be the APNs reason to answer, such as InternalServerError."
                )
            }
        }
        do throws(ControlInputError) {
            let type = object["type"]?.stringValue
            let allowed: Set<String>
            let action: APNSSimulatorFault.Action
            switch type {
            case "status":
                allowed = ["type", "status", "reason", "every", "token", "times", "applies_to"]
                guard let status = try integer("status", in: 400...599) else {
                    throw ControlInputError(
                        field: "status",
                        message: "status is required: the HTTP status to answer, 400 to 599."
                    )
                }
                action = .respond(status: status, reason: try reason(default: defaultReasons[status]))
            case "latency":
                allowed = ["type", "latency_ms", "every", "token", "times", "applies_to"]
                guard let milliseconds = try integer("latency_ms", in: 1...600_000) else {
                    throw ControlInputError(
                        field: "latency_ms",
                        message: "latency_ms is required: the added delay in milliseconds."
                    )
                }
                action = .delay(.milliseconds(milliseconds))
            case "goaway":
                allowed = ["type", "after_streams", "reason", "error_code"]
                let after = try integer("after_streams", in: 1...1_000_000) ?? 1
                let code = try integer("error_code", in: 0...0xFFFF_FFFF) ?? 0
                action = .goAway(afterStreams: after, reason: try reason(default: .shutdown), errorCode: UInt32(code))
            case "close":
                allowed = ["type", "after_streams"]
                action = .closeConnection(afterStreams: try integer("after_streams", in: 1...1_000_000) ?? 1)
            default:
                throw ControlInputError(field: "type", message: "type must be status, latency, goaway or close.")
            }
            if let unknown = object.keys.sorted().first(where: { !allowed.contains($0) }) {
                throw ControlInputError(field: unknown, message: "\(unknown) does not apply to a \(type ?? "") fault.")
            }
            var token: String?
            switch object["token"] {
            case nil, .null?: break
            case .string(let text)? where HeaderRules.isWellFormedDeviceToken(text): token = text
            default:
                throw ControlInputError(
                    field: "token",
                    message: "token must be a device token (64 to 200 hexadecimal characters)."
                )
            }
            var appliesTo: Set<APNSSimulatorFault.RequestKind> = [.device, .broadcast]
            switch object["applies_to"] {
            case nil, .null?: break
            case .array(let items)?:
                appliesTo = []
                for item in items {
                    guard let kind = item.stringValue.flatMap(APNSSimulatorFault.RequestKind.init(rawValue:)) else {
                        throw ControlInputError(
                            field: "applies_to",
                            message: "applies_to lists device, broadcast and channels."
                        )
                    }
                    appliesTo.insert(kind)
                }
            default:
                throw ControlInputError(
                    field: "applies_to",
                    message: "applies_to lists device, broadcast and channels."
                )
            }
            return .success(
                APNSSimulatorFault(
                    action,
                    every: try integer("every", in: 1...1_000_000) ?? 1,
                    token: token,
                    times: try integer("times", in: 1...1_000_000_000),
                    appliesTo: appliesTo
                )
            )
        } catch {
            return .failure(error)
        }
    }

    private static let defaultReasons: [Int: APNSErrorReason] = [
        410: .unregistered, 429: .tooManyRequests, 500: .internalServerError, 503: .serviceUnavailable,
    ]

    private static func jsonObject(_ body: [UInt8]) -> Result<[String: APNSJSONValue], ControlInputError> {
        guard !body.isEmpty, let object = (try? APNSJSONValue(parsing: body))?.objectValue else {
            return .failure(ControlInputError(field: nil, message: "The body must be a JSON object."))
        }
        return .success(object)
    }
}
