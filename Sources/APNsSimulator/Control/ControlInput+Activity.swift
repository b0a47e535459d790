import APNs
import Foundation
import HeraldCore

/// An in-app start as the control API reads it.
struct InAppStart: Sendable {
    var bundleID: String
    var pushType: VirtualDeviceRegistry.InAppPushType?
    var message: LiveActivityMessage
}

extension ControlInput {
    static let inAppStartFields: Set<String> = [
        "bundle_id", "attributes_type", "attributes", "content_state", "alert", "stale_date", "relevance_score",
        "push_type", "channel_id",
    ]

    /// `POST /devices/{token}/activities`: `{"bundle_id", "attributes_type", "attributes",
    /// "content_state", "alert"?, "stale_date"?, "relevance_score"?, "push_type"?: "token" |
    /// "channel", "channel_id"?}` (`channel_id` with `push_type: "channel"`). Times are RFC 3339 or
    /// seconds since 1970.
    static func inAppStart(_ body: [UInt8], now: Date) -> Result<InAppStart, ControlInputError> {
        guard !body.isEmpty, let object = (try? APNSJSONValue(parsing: body))?.objectValue else {
            return .failure(ControlInputError(field: nil, message: "The body must be a JSON object."))
        }
        func fail(_ field: String, _ message: String) -> Result<InAppStart, ControlInputError> {
            .failure(ControlInputError(field: field, message: message))
        }
        if let unknown = object.keys.sorted().first(where: { !inAppStartFields.contains($0) }) {
            return fail(
                unknown,
                "\(unknown) is not a field of an in-app start: use \(inAppStartFields.sorted().joined(separator: ", "))."
            )
        }
        guard let bundleID = object["bundle_id"]?.stringValue, HeaderRules.isWellFormedTopic(bundleID) else {
            return fail("bundle_id", "bundle_id must be the app's bundle ID, such as com.example.app.")
        }
        guard let type = object["attributes_type"]?.stringValue, !type.isEmpty, type.utf8.count <= 256 else {
            return fail("attributes_type", "attributes_type must name the ActivityAttributes type (1 to 256 bytes).")
        }
        guard let attributes = object["attributes"], attributes.objectValue != nil else {
            return fail("attributes", "attributes must be a JSON object of the static attributes.")
        }
        guard let contentState = object["content_state"], contentState.objectValue != nil else {
            return fail("content_state", "content_state must be a JSON object matching the ContentState.")
        }
        var pushType: VirtualDeviceRegistry.InAppPushType?
        switch object["push_type"] {
        case nil, .null?: break
        case .string(let name)? where VirtualDeviceRegistry.InAppPushType(rawValue: name) != nil:
            pushType = VirtualDeviceRegistry.InAppPushType(rawValue: name)
        default: return fail("push_type", "push_type must be token or channel, or left out for none.")
        }
        let channelID = object["channel_id"]?.stringValue
        if (pushType == .channel) != (channelID != nil) {
            return fail("channel_id", "channel_id goes with push_type channel, and only with it.")
        }
        var staleDate: Date?
        switch object["stale_date"] {
        case nil, .null?: break
        case .string(let text)? where RFC3339.date(from: text) != nil: staleDate = RFC3339.date(from: text)
        case .integer(let seconds)?: staleDate = Date(timeIntervalSince1970: Double(seconds))
        default: return fail("stale_date", "stale_date must be an RFC 3339 time or seconds since 1970.")
        }
        var relevanceScore: Double?
        switch object["relevance_score"] {
        case nil, .null?: break
        case .integer(let number)?: relevanceScore = Double(number)
        case .double(let number)? where number.isFinite: relevanceScore = number
        default: return fail("relevance_score", "relevance_score must be a number.")
        }
        var aps: [String: APNSJSONValue] = [
            "event": "start", "timestamp": .integer(Int64(now.timeIntervalSince1970.rounded(.down))),
            "attributes-type": .string(type), "attributes": attributes, "content-state": contentState,
        ]
        if let alert = object["alert"], alert != .null { aps["alert"] = alert }
        if let channelID { aps["input-push-channel"] = .string(channelID) }
        guard var message = LiveActivityMessage(aps) else {
            return fail("attributes_type", "The start could not be read.")
        }
        message.staleDate = staleDate
        message.relevanceScore = relevanceScore
        return .success(InAppStart(bundleID: bundleID, pushType: pushType, message: message))
    }
}
