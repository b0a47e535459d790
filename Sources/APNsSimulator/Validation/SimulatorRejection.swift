import APNs
import Foundation
import HeraldCore

/// An APNs refusal as the simulator answers it: the status, the `reason` of the JSON body and,
/// for 410, the `timestamp` (milliseconds since 1970) at which the token stopped being valid.
struct SimulatorRejection: Error, Sendable, Hashable, CustomStringConvertible {
    var status: Int
    var reason: APNSErrorReason
    /// Sent as `"timestamp"` in milliseconds; APNs sends it with 410 only.
    var timestamp: Date?

    init(status: Int, reason: APNSErrorReason, timestamp: Date? = nil) {
        self.status = status
        self.reason = reason
        self.timestamp = timestamp
    }

    /// 400 with `reason`.
    static func badRequest(_ reason: APNSErrorReason) -> SimulatorRejection {
        SimulatorRejection(status: 400, reason: reason)
    }

    /// 403 with `reason`.
    static func forbidden(_ reason: APNSErrorReason) -> SimulatorRejection {
        SimulatorRejection(status: 403, reason: reason)
    }

    static let badPath = SimulatorRejection(status: 404, reason: .badPath)
    static let methodNotAllowed = SimulatorRejection(status: 405, reason: .methodNotAllowed)
    static let payloadTooLarge = SimulatorRejection(status: 413, reason: .payloadTooLarge)

    /// `{"reason":"…"}`, plus `"timestamp":<ms>` when set.
    var body: [UInt8] {
        var text = #"{"reason":"# + JSONText.quote(reason.rawValue)
        if let timestamp {
            text += #","timestamp":"# + String(Self.milliseconds(timestamp))
        }
        text += "}"
        return Array(text.utf8)
    }

    var description: String {
        timestamp.map { "\(status) \(reason) (timestamp \(Self.milliseconds($0)))" } ?? "\(status) \(reason)"
    }

    /// Whole milliseconds since 1970, rounded down.
    static func milliseconds(_ date: Date) -> Int64 {
        let value = (date.timeIntervalSince1970 * 1000).rounded(.down)
        guard value.isFinite else { return 0 }
        return Int64(max(min(value, 9.0e15), -9.0e15))
    }
}
