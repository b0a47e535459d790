public import Foundation
import HeraldCore

/// The JSON APNs sends with a refusal, in a response body or a GOAWAY frame:
/// `{"reason": "…"}`, plus `"timestamp"` (milliseconds since 1970) with a 410.
///
/// Parsing never fails: a missing, empty or malformed body gives `nil` fields.
public struct APNSErrorBody: Sendable, Hashable {
    public var reason: APNSErrorReason?
    /// When APNs last knew the token to be invalid (410 only).
    public var timestamp: Date?

    public init(reason: APNSErrorReason? = nil, timestamp: Date? = nil) {
        self.reason = reason
        self.timestamp = timestamp
    }

    /// Reads `bytes`; anything unexpected leaves the field `nil`. Bodies over 64 KiB are not read.
    public init(parsing bytes: [UInt8]) {
        guard !bytes.isEmpty, bytes.count <= 65_536, let object = (try? APNSJSONValue(parsing: bytes))?.objectValue
        else { return }
        if let reason = object["reason"]?.stringValue, !reason.isEmpty {
            self.reason = APNSErrorReason(rawValue: reason)
        }
        self.timestamp = object["timestamp"].flatMap(Self.milliseconds).map {
            Date(timeIntervalSince1970: Double($0) / 1000)
        }
    }

    private static func milliseconds(_ value: APNSJSONValue) -> Int64? {
        let milliseconds: Int64?
        switch value {
        case .integer(let number): milliseconds = number
        case .double(let number) where number.isFinite && abs(number) < 1e17: milliseconds = Int64(number)
        case .string(let text): milliseconds = Int64(text)
        default: milliseconds = nil
        }
        // APNs sends a time near now; one past year 9999 is not a time (and would not fit a date
        // in milliseconds again), so it is treated as absent.
        return milliseconds.flatMap { (0..<(EpochTime.maximumSeconds + 1) * 1000).contains($0) ? $0 : nil }
    }
}
