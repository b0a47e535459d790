import APNs
import Foundation
import HTTPRouting
import HeraldCore

/// The virtual devices' routes: what each token's Lock Screen shows, and the user's Allow.
///
/// | route | does |
/// |---|---|
/// | `GET /devices/{token}/activities` | the device's Live Activities, in start order |
/// | `POST /devices/{token}/activities` | the app starts one itself (`Activity.request`) |
/// | `GET /devices/{token}/activities/{activity_id}` | one of them; 404 `unknown_activity` |
/// | `POST /devices/{token}/activities/{activity_id}/allow` | the user taps Allow: the update token |
/// | `GET /devices` | every virtual device with its Live Activities (the admin console's lock screens) |
/// | `DELETE /devices` | forgets every virtual device |
extension APNSSimulatorControl {
    // MARK: Operations

    func activities(device token: String) -> [APNSSimulatorActivity] {
        let now = core.clock.now()
        return core.store.withState { $0.devices.activities(device: token, now: now) }
    }

    func allActivities() -> [APNSSimulatorActivity] {
        let now = core.clock.now()
        return core.store.withState { $0.devices.all(now: now) }
    }

    func allowActivity(
        device token: String,
        id: String
    ) -> Result<APNSSimulatorActivity, VirtualDeviceRegistry.AllowFailure> {
        let now = core.clock.now()
        return core.store.withState { state in
            state.devices.allow(device: token, id: id, tokens: &state.tokens, now: now)
        }
    }

    // MARK: Routes

    static func registerDevices(on router: inout Router, prefix: String, core: SimulatorCore) {
        let store = core.store
        let activitiesPath = prefix + "/devices/{token}/activities"
        let activityPath = activitiesPath + "/{activity_id}"
        let allowPath = activityPath + "/allow"

        router.get(activitiesPath) { request in
            guard let token = deviceToken(request) else { return badToken }
            let now = core.clock.now()
            let activities = store.withState { $0.devices.activities(device: token, now: now) }
            var writer = JSONObjectWriter()
            writer.string("device_token", token)
            writer.array("activities", activities.map { activityJSON($0, now: now) })
            return json(writer.json)
        }
        router.post(activitiesPath) { request in
            guard let token = deviceToken(request) else { return badToken }
            let now = core.clock.now()
            let start: InAppStart
            switch ControlInput.inAppStart(request.body, now: now) {
            case .success(let parsed): start = parsed
            case .failure(let error): return error.response
            }
            let result = store.withState { state in
                state.devices.startInApp(
                    start.message,
                    token: token,
                    bundleID: start.bundleID,
                    pushType: start.pushType,
                    channels: state.channels,
                    tokens: &state.tokens,
                    now: now
                )
            }
            switch result {
            case .success(let activity):
                var response = json(activityJSON(activity, now: now))
                response.status = 201
                return response
            case .failure(.deviceLimit):
                return limitReached(
                    "The simulator's virtual devices are all taken: DELETE \(prefix)/devices, or start it with a larger --max-devices."
                )
            case .failure(.activityLimit):
                return limitReached(
                    "This device holds as many activities as it may: DELETE \(prefix)/devices, or start the simulator with a larger --max-activities."
                )
            case .failure(.tokenLimit(let limit)):
                return limitReached(
                    "The simulator already holds \(limit) device tokens, so it cannot hand out an update token: DELETE \(prefix)/tokens, or start it with a larger token limit."
                )
            case .failure(.channelNotRegistered):
                return .error(
                    status: 422,
                    code: "channel_not_registered",
                    message: "The app has no such channel: create it first (POST /1/apps/<bundle ID>/channels).",
                    field: "channel_id"
                )
            case .failure(.incomplete):
                return ControlInputError(field: nil, message: "The start lacks attributes or a content state.").response
            }
        }
        router.get(activityPath) { request in
            guard let token = deviceToken(request) else { return badToken }
            let id = request.parameters["activity_id"] ?? ""
            let now = core.clock.now()
            guard let activity = store.withState({ $0.devices.activity(device: token, id: id, now: now) }) else {
                return unknownActivity(prefix: prefix, token: token)
            }
            return json(activityJSON(activity, now: now))
        }
        router.post(allowPath) { request in
            guard let token = deviceToken(request) else { return badToken }
            let id = request.parameters["activity_id"] ?? ""
            let now = core.clock.now()
            let result = store.withState { state in
                state.devices.allow(device: token, id: id, tokens: &state.tokens, now: now)
            }
            switch result {
            case .success(let activity):
                return json(activityJSON(activity, now: now))
            case .failure(.unknownActivity):
                return unknownActivity(prefix: prefix, token: token)
            case .failure(.tokenLimit(let limit)):
                return limitReached(
                    "The simulator already holds \(limit) device tokens, so it cannot hand out an update "
                        + "token: DELETE \(prefix)/tokens, or start it with a larger token limit (docs/SIMULATOR.md)."
                )
            }
        }
        router.get(prefix + "/devices") { _ in
            let now = core.clock.now()
            let activities = store.withState { $0.devices.all(now: now) }
            var order: [String] = []
            var byDevice: [String: [String]] = [:]
            for activity in activities {
                if byDevice[activity.deviceToken] == nil { order.append(activity.deviceToken) }
                byDevice[activity.deviceToken, default: []].append(activityJSON(activity, now: now))
            }
            var writer = JSONObjectWriter()
            writer.array(
                "devices",
                order.map { token in
                    var device = JSONObjectWriter()
                    device.string("device_token", token)
                    device.array("activities", byDevice[token] ?? [])
                    return device.json
                }
            )
            return json(writer.json)
        }
        router.delete(prefix + "/devices") { _ in
            store.withState { state in
                for token in state.devices.removeAll() { _ = state.tokens.remove(token) }
            }
            return HTTPResponse(status: 204)
        }
        // The access log shows device tokens shortened, as Herald's own routes do.
        for pattern in [activitiesPath, activityPath, allowPath] {
            router.logPaths(of: pattern) { request in
                let devices = prefix + "/devices/"
                guard request.rawPath.hasPrefix(devices) else { return request.rawPath }
                let rest = request.rawPath.dropFirst(devices.count)
                let token = rest.prefix { $0 != "/" }
                return devices + APNSDeviceToken.shortened(String(token)) + rest.dropFirst(token.count)
            }
        }
    }

    private static func deviceToken(_ request: HTTPRequest) -> String? {
        guard let token = request.parameters["token"], HeaderRules.isWellFormedDeviceToken(token) else { return nil }
        return token.lowercased()
    }

    private static var badToken: HTTPResponse {
        ControlInputError(
            field: "token",
            message: "The path's token must be a device token: 64 to 200 hexadecimal characters."
        ).response
    }

    private static func unknownActivity(prefix: String, token: String) -> HTTPResponse {
        .error(
            status: 404,
            code: "unknown_activity",
            message: "This device has no activity with that id: GET \(prefix)/devices/"
                + "\(APNSDeviceToken.shortened(token))/activities lists its activity_id values.",
            field: "activity_id"
        )
    }

    private static func limitReached(_ message: String) -> HTTPResponse {
        .error(status: 409, code: "limit_reached", message: message)
    }

    private static func json(_ text: String) -> HTTPResponse {
        HTTPResponse(status: 200, headers: ["Content-Type": "application/json"], body: Array(text.utf8))
    }

    // MARK: JSON

    static func activityJSON(_ activity: APNSSimulatorActivity, now: Date) -> String {
        var writer = JSONObjectWriter()
        writer.string("activity_id", activity.activityID)
        writer.string("device_token", activity.deviceToken)
        writer.string("bundle_id", activity.bundleID)
        writer.string("state", activity.state.rawValue)
        writer.bool("allowed", activity.allowed)
        writer.bool("input_push_token", activity.requestsUpdateToken)
        writer.string("update_token", activity.updateToken)
        writer.string("channel_id", activity.channelID)
        writer.string("attributes_type", activity.attributesType)
        writer.raw("attributes", jsonText(activity.attributes))
        writer.raw("content_state", jsonText(activity.contentState))
        writer.raw("alert", jsonText(activity.alert))
        writer.raw("timestamp", number(activity.timestamp))
        writer.string("stale_date", activity.staleDate.map { RFC3339.string(from: $0) })
        writer.bool("stale", activity.isStale(at: now))
        writer.string("dismissal_date", activity.dismissalDate.map { RFC3339.string(from: $0) })
        writer.raw("relevance_score", activity.relevanceScore.map(number) ?? "null")
        writer.string("started_at", RFC3339.string(from: activity.startedAt, fractional: true))
        writer.string("ended_at", activity.endedAt.map { RFC3339.string(from: $0, fractional: true) })
        writer.array(
            "changes",
            activity.changes.map { change in
                var item = JSONObjectWriter()
                item.string("at", RFC3339.string(from: change.at, fractional: true))
                item.string("event", change.event)
                item.string("via", change.route.rawValue)
                item.raw("timestamp", change.timestamp.map(number) ?? "null")
                item.bool("applied", change.applied)
                item.string("note", change.note)
                item.string("request_id", change.requestID)
                return item.json
            }
        )
        return writer.json
    }

    /// JSON text of a value, keys sorted; `null` for none.
    static func jsonText(_ value: APNSJSONValue?) -> String {
        guard let value else { return "null" }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(value) else { return "null" }
        return String(decoding: data, as: UTF8.self)
    }

    /// A whole number without a fraction, else the number as Swift writes it.
    static func number(_ value: Double) -> String {
        if value.rounded() == value, abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }
}
