import APNs
import Foundation
import HeraldCore
import Notifications

/// Target `payload`: the APNs payload checks on arbitrary bytes — the JSON syntax check, the
/// JSON value parser, the per-push-type validation — and the same bytes as a `/v1` payload.
public enum PayloadFuzz {
    static let token = String(repeating: "ab", count: 32)
    static let now = Date(timeIntervalSince1970: 1_900_000_000)

    public static func run(_ data: [UInt8]) {
        checkParser(data)
        for pushType in [APNSPushType.alert, .background, .liveActivity, .voip, .complication] {
            let request = APNSRequest(
                deviceToken: token,
                pushType: pushType,
                topic: .explicit("com.example.fuzz"),
                payload: data
            )
            _ = try? request.validate()
        }
        var body = Array(#"{"tokens":["\#(token)"],"payload":"#.utf8)
        body += data
        body.append(UInt8(ascii: "}"))
        _ = try? NotificationRequest.parse(body, now: now)
    }

    /// Herald's JSON parser against Foundation's behind the strict syntax check: both accept the
    /// same texts (Foundation's overflowing doubles aside) with the same values, and what the
    /// parser read, written back, reads the same.
    static func checkParser(_ data: [UInt8]) {
        let parsed = try? APNSJSONValue(parsing: data)
        let reference: APNSJSONValue?? =
            JSONValue.check(data, maximumDepth: JSONValue.payloadMaximumDepth) == nil
            ? (try? JSONSerialization.jsonObject(with: Data(data), options: [.fragmentsAllowed])).map(foundation) : nil
        switch (parsed, reference) {
        case (nil, nil): break
        case (let value?, let expected??):
            precondition(value.isClose(to: expected), "the parser read \(value), Foundation \(expected)")
        case (nil, .some(let expected)):
            // Foundation reads a number too large for a double as infinity (kept, or replaced by
            // a later duplicate key); Herald refuses it.
            precondition(
                expected?.hasInfinity ?? false || hasOverflowingNumber(data),
                "the parser refused what Foundation read: \(String(describing: expected))"
            )
        case (let value?, _):
            preconditionFailure("the parser read \(value) from text the strict check or Foundation refuses")
        }
        if let parsed, let written = try? parsed.jsonBytes() {
            precondition((try? APNSJSONValue(parsing: written)) == parsed, "written JSON reads differently")
        }
    }

    /// Whether the text holds a number no double can hold.
    static func hasOverflowingNumber(_ data: [UInt8]) -> Bool {
        let numberBytes = Set("-+.0123456789eE".utf8)
        return data.split { !numberBytes.contains($0) }.contains { token in
            Double(String(decoding: token, as: UTF8.self)).map { !$0.isFinite } ?? false
        }
    }

    /// What `JSONSerialization` produced, as a value; `nil` for a kind it cannot produce.
    static func foundation(_ value: Any) -> APNSJSONValue? {
        switch value {
        case let dictionary as [String: Any]:
            var object: [String: APNSJSONValue] = [:]
            for (key, item) in dictionary {
                guard let converted = foundation(item) else { return nil }
                object[key] = converted
            }
            return .object(object)
        case let array as [Any]:
            var items: [APNSJSONValue] = []
            for item in array {
                guard let converted = foundation(item) else { return nil }
                items.append(converted)
            }
            return .array(items)
        case let string as String: return .string(string)
        case let number as NSNumber:
            switch String(cString: number.objCType) {
            case "c", "B": return .bool(number.boolValue)
            case "d", "f": return .double(number.doubleValue)
            case "Q":
                let unsigned = number.uint64Value
                return unsigned <= UInt64(Int64.max) ? .integer(Int64(unsigned)) : .double(number.doubleValue)
            default: return .integer(number.int64Value)
            }
        case is NSNull: return .null
        default: return nil
        }
    }
}

extension APNSJSONValue {
    /// Equal, but for doubles a few units apart in the last place: Foundation's parser on Linux
    /// does not round long numbers correctly, Swift's `Double(_:)` does.
    fileprivate func isClose(to other: APNSJSONValue) -> Bool {
        switch (self, other) {
        case (.double(let a), .double(let b)): return a == b || abs(a - b) <= 1e-12 * max(abs(a), abs(b))
        case (.array(let a), .array(let b)): return a.count == b.count && zip(a, b).allSatisfy { $0.isClose(to: $1) }
        case (.object(let a), .object(let b)):
            return a.count == b.count && a.allSatisfy { key, value in b[key].map { value.isClose(to: $0) } ?? false }
        default: return self == other
        }
    }

    fileprivate var hasInfinity: Bool {
        switch self {
        case .double(let value): !value.isFinite
        case .array(let items): items.contains { $0.hasInfinity }
        case .object(let members): members.values.contains { $0.hasInfinity }
        default: false
        }
    }
}
