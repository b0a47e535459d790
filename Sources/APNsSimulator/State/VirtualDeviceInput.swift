import APNs
import Foundation
import HeraldCore

/// The Live Activity content of one push or broadcast, as iOS reads it (APNS.md §6).
struct LiveActivityMessage: Sendable, Hashable {
    enum Event: String, Sendable {
        case start, update, end
    }

    var event: Event
    /// Seconds since 1970; `nil` when absent or not a number.
    var timestamp: Double?
    var contentState: APNSJSONValue?
    var alert: APNSJSONValue?
    var staleDate: Date?
    var dismissalDate: Date?
    var relevanceScore: Double?
    var attributesType: String?
    var attributes: APNSJSONValue?
    var inputPushToken = false
    var inputPushChannel: String?

    /// Reads the keys of an `aps` object (Live Activity pushes and broadcasts) or of a silent
    /// push's `live-activity` object; `nil` without a known `event`.
    init?(_ object: [String: APNSJSONValue]) {
        guard let name = object["event"]?.stringValue, let event = Event(rawValue: name) else { return nil }
        self.event = event
        timestamp = Self.number(object["timestamp"])
        if let state = object["content-state"], state.objectValue != nil { contentState = state }
        alert = object["alert"]
        staleDate = Self.number(object["stale-date"]).map(Date.init(timeIntervalSince1970:))
        dismissalDate = Self.number(object["dismissal-date"]).map(Date.init(timeIntervalSince1970:))
        relevanceScore = Self.number(object["relevance-score"])
        attributesType = object["attributes-type"]?.stringValue
        if let attributes = object["attributes"], attributes.objectValue != nil { self.attributes = attributes }
        inputPushToken = Self.number(object["input-push-token"]) == 1
        inputPushChannel = object["input-push-channel"]?.stringValue
    }

    private static func number(_ value: APNSJSONValue?) -> Double? {
        switch value {
        case .integer(let number)?: Double(number)
        case .double(let number)? where number.isFinite: number
        default: nil
        }
    }
}

/// What an accepted push means to the virtual devices.
enum VirtualDeviceInput: Sendable, Hashable {
    /// A `liveactivity` push: a start to a push-to-start token, or an update or end to an update
    /// token.
    case liveActivity(LiveActivityMessage)
    /// A silent push (`background`, `content-available: 1`) carrying `live-activity`: the app's
    /// code applies it to the activity `activityID`.
    case silent(activityID: String, message: LiveActivityMessage)

    /// Reads a device push that passed validation; `nil` for pushes the virtual devices ignore
    /// (parsed only for Live Activity pushes, and background ones when `applySilent` is on).
    static func parse(pushType: APNSPushType, body: [UInt8], applySilent: Bool) -> VirtualDeviceInput? {
        if pushType == .liveActivity {
            guard let aps = object(body)?["aps"]?.objectValue, let message = LiveActivityMessage(aps) else {
                return nil
            }
            return .liveActivity(message)
        }
        guard applySilent, pushType == .background, let payload = object(body) else { return nil }
        guard case .integer(1)? = payload["aps"]?["content-available"],
            let live = payload["live-activity"]?.objectValue,
            let activityID = live["activity-id"]?.stringValue,
            let message = LiveActivityMessage(live), message.event != .start
        else { return nil }
        return .silent(activityID: activityID, message: message)
    }

    /// Reads a broadcast that passed validation: its `aps`, when it is an update or end.
    static func broadcast(body: [UInt8]) -> LiveActivityMessage? {
        guard let aps = object(body)?["aps"]?.objectValue, let message = LiveActivityMessage(aps),
            message.event != .start
        else { return nil }
        return message
    }

    private static func object(_ body: [UInt8]) -> [String: APNSJSONValue]? {
        (try? APNSJSONValue(parsing: body))?.objectValue
    }
}
