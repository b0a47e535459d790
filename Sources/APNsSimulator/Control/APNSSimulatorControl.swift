import APNs
import Foundation
public import HTTPRouting
import HeraldCore

/// The simulator's control API (HTTP/1.1, JSON), for tests and for people: the deliveries it
/// received, device tokens to treat as registered or unregistered, faults to inject, channels.
///
/// | route | does |
/// |---|---|
/// | `GET /` | the simulator's URL, CA file, keys, topics and counts |
/// | `GET /deliveries?token=&topic=&push_type=&channel_id=&status=&kind=&limit=` | newest first (limit default 100) |
/// | `DELETE /deliveries` | forgets them |
/// | `GET /tokens`, `POST /tokens`, `DELETE /tokens[?token=]` | `{"token","topic"?,"unregistered_at"?}` |
/// | `GET /faults`, `POST /faults`, `DELETE /faults` | see docs/SIMULATOR.md |
/// | `GET /channels`, `DELETE /channels` | every app's broadcast channels |
/// | `GET /devices/{token}/activities[/{id}]`, `POST …/{id}/allow`, `DELETE /devices` | virtual devices' Live Activities |
///
/// Served on the simulator's control port, or mounted on another ``HTTPServer/Router``:
///
/// ```swift
/// var router = Router()
/// simulator.control.register(on: &router, prefix: "/simulator")   // GET /simulator/deliveries
/// ```
public struct APNSSimulatorControl: HTTPResponder {
    /// What `GET /` shows.
    struct Info: Sendable {
        var url: String
        var cleartextURL: String?
        var caFile: String?
        var topics: [String]
        var keys: [(keyID: String, teamID: String?)]
        var teamID: String?
        var initialMaxConcurrentStreams: Int
        var maxConcurrentStreams: Int
    }

    /// The `limit` of `GET /deliveries` when none is given.
    public static let defaultDeliveryLimit = 100

    let info: Info
    let core: SimulatorCore
    private let router: Router

    init(core: SimulatorCore, info: Info) {
        self.core = core
        self.info = info
        var router = Router()
        Self.register(on: &router, prefix: "", core: core, info: info)
        self.router = router
    }

    public func respond(to request: HTTPRequest, answer: HTTPResponseSink) {
        router.respond(to: request, answer: answer)
    }

    /// 404 and 405 on the headers, before a body is read.
    public func admit(_ request: HTTPRequest, refusal: HTTPResponse?) -> HTTPAdmission {
        router.admit(request, refusal: refusal)
    }

    /// Adds the control routes to `router` under `prefix` (`""` or `/simulator`, say).
    public func register(on router: inout Router, prefix: String) {
        Self.register(on: &router, prefix: prefix, core: core, info: info)
    }

    // MARK: Operations

    func deliveries(_ filter: APNSSimulatorDeliveryFilter) -> [APNSSimulatorDelivery] {
        core.store.withState { $0.deliveries.newestFirst(matching: filter) }
    }

    func removeAllDeliveries() {
        core.store.withState { $0.deliveries.removeAll() }
    }

    func setToken(_ token: APNSSimulatorTokenState) -> Bool {
        core.store.withState { $0.tokens.set(token) }
    }

    func addFault(_ fault: APNSSimulatorFault) -> Int? {
        core.store.withState { $0.faults.add(fault) }
    }

    func removeAllFaults() {
        core.store.withState { $0.faults.removeAll() }
    }

    func channels() -> [APNSSimulatorChannel] {
        core.store.withState { $0.channels.all() }
    }

    // MARK: Routes

    private static func register(on router: inout Router, prefix rawPrefix: String, core: SimulatorCore, info: Info) {
        var prefix = rawPrefix
        while prefix.hasSuffix("/") { prefix.removeLast() }
        precondition(
            prefix.isEmpty || prefix.hasPrefix("/"),
            "the control API prefix must start with '/': \(rawPrefix)"
        )
        let store = core.store
        let base = prefix

        let overview: Router.Handler = { _ in
            let counts = store.withState { state in
                (state.deliveries.count, state.deliveries.total, state.faults.entries.count, state.channels.all().count)
            }
            let devices = store.withState { state in
                (state.devices.devices.count, state.devices.activities.count, state.devices.refusedStarts)
            }
            var writer = JSONObjectWriter()
            writer.string("url", info.url)
            writer.string("cleartext_url", info.cleartextURL)
            writer.string("ca_file", info.caFile)
            writer.strings("topics", info.topics)
            writer.string("team_id", info.teamID)
            writer.array(
                "keys",
                info.keys.map { key in
                    var object = JSONObjectWriter()
                    object.string("key_id", key.keyID)
                    object.string("team_id", key.teamID)
                    return object.json
                }
            )
            var streams = JSONObjectWriter()
            streams.integer("initial", info.initialMaxConcurrentStreams)
            streams.integer("authenticated", info.maxConcurrentStreams)
            writer.raw("max_concurrent_streams", streams.json)
            writer.integer("connections", core.connections.live().count)
            writer.integer("deliveries_stored", counts.0)
            writer.integer("deliveries_received", counts.1)
            writer.integer("faults", counts.2)
            writer.integer("channels", counts.3)
            writer.integer("virtual_devices", devices.0)
            writer.integer("activities", devices.1)
            writer.integer("activities_refused", devices.2)
            return jsonResponse(writer.json)
        }
        router.get(prefix.isEmpty ? "/" : prefix, overview)
        if !prefix.isEmpty { router.get(prefix + "/", overview) }

        router.get(prefix + "/deliveries") { request in
            let filter: APNSSimulatorDeliveryFilter
            switch deliveryFilter(request) {
            case .success(let parsed): filter = parsed
            case .failure(let error): return error.response
            }
            let deliveries = store.withState { $0.deliveries.newestFirst(matching: filter) }
            var writer = JSONObjectWriter()
            writer.array("deliveries", deliveries.map(deliveryJSON))
            return jsonResponse(writer.json)
        }
        router.delete(prefix + "/deliveries") { _ in
            store.withState { $0.deliveries.removeAll() }
            return HTTPResponse(status: 204)
        }

        router.get(prefix + "/tokens") { _ in
            let tokens = store.withState { $0.tokens.tokens.values.sorted { $0.token < $1.token } }
            var writer = JSONObjectWriter()
            writer.array("tokens", tokens.map(tokenJSON))
            return jsonResponse(writer.json)
        }
        router.post(prefix + "/tokens") { request in
            switch ControlInput.tokenState(request.body, now: core.clock.now()) {
            case .success(let token):
                let (stored, limit) = store.withState { ($0.tokens.set(token), $0.tokens.limit) }
                guard stored else {
                    return limitReached(
                        "The simulator already holds \(limit) device tokens: DELETE \(base)/tokens, "
                            + "or start it with a larger token limit (docs/SIMULATOR.md)."
                    )
                }
                return jsonResponse(tokenJSON(token))
            case .failure(let error):
                return error.response
            }
        }
        router.delete(prefix + "/tokens") { request in
            if let token = request.queryValue("token") {
                guard store.withState({ $0.tokens.remove(token) }) else {
                    return .error(status: 404, code: "unknown_token", message: "No such token is registered.")
                }
            } else {
                store.withState { $0.tokens.removeAll() }
            }
            return HTTPResponse(status: 204)
        }

        router.get(prefix + "/faults") { _ in
            let entries = store.withState { $0.faults.entries }
            var writer = JSONObjectWriter()
            writer.array("faults", entries.map { faultJSON($0.fault, id: $0.id, matched: $0.matched, fired: $0.fired) })
            return jsonResponse(writer.json)
        }
        router.post(prefix + "/faults") { request in
            switch ControlInput.fault(request.body) {
            case .success(let fault):
                let (added, limit) = store.withState { ($0.faults.add(fault), $0.faults.limit) }
                guard let id = added else {
                    return limitReached(
                        "The simulator already holds \(limit) faults: DELETE \(base)/faults, "
                            + "or start it with a larger fault limit (docs/SIMULATOR.md)."
                    )
                }
                return jsonResponse(faultJSON(fault, id: id, matched: 0, fired: 0), status: 201)
            case .failure(let error):
                return error.response
            }
        }
        router.delete(prefix + "/faults") { _ in
            store.withState { $0.faults.removeAll() }
            return HTTPResponse(status: 204)
        }

        router.get(prefix + "/channels") { _ in
            let channels = store.withState { $0.channels.all() }
            var writer = JSONObjectWriter()
            writer.array("channels", channels.map(channelJSON))
            return jsonResponse(writer.json)
        }
        router.delete(prefix + "/channels") { _ in
            store.withState { $0.channels.removeAll() }
            return HTTPResponse(status: 204)
        }
        registerDevices(on: &router, prefix: prefix, core: core)
        CloudKitControlRoutes.register(on: &router, prefix: prefix, endpoint: core.cloudKit)
    }

    /// 409 for a registry that is full.
    private static func limitReached(_ message: String) -> HTTPResponse {
        .error(status: 409, code: "limit_reached", message: message)
    }

    // MARK: JSON

    private static func jsonResponse(_ json: String, status: Int = 200) -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": "application/json"], body: Array(json.utf8))
    }

    static func deliveryJSON(_ delivery: APNSSimulatorDelivery) -> String {
        var writer = JSONObjectWriter()
        writer.string("id", APNSIdentifier.lowercaseString(delivery.id))
        writer.string("kind", delivery.kind.rawValue)
        writer.string("received_at", RFC3339.string(from: delivery.receivedAt, fractional: true))
        writer.integer("connection_id", delivery.connectionID)
        writer.string("token", delivery.token)
        writer.string("topic", delivery.topic)
        writer.string("push_type", delivery.pushType)
        writer.integer("priority", delivery.priority)
        writer.integer("expiration", delivery.expiration)
        writer.string("collapse_id", delivery.collapseID)
        writer.string("apns_id", delivery.apnsID)
        writer.string("request_id", delivery.requestID)
        writer.string("channel_id", delivery.channelID)
        writer.integer("status", delivery.status)
        writer.string("reason", delivery.reason?.rawValue)
        writer.integer("timestamp", delivery.timestamp.map(SimulatorRejection.milliseconds))
        writer.raw(
            "payload",
            (JSONValue.check(delivery.payload, maximumDepth: JSONValue.payloadMaximumDepth) == nil)
                ? String(decoding: delivery.payload, as: UTF8.self) : "null"
        )
        writer.integer("payload_size", delivery.payload.count)
        if let token = delivery.providerToken {
            var jwt = JSONObjectWriter()
            jwt.string("kid", token.keyID)
            jwt.string("iss", token.teamID)
            jwt.integer("iat", token.issuedAt)
            writer.raw("jwt", jwt.json)
        } else {
            writer.raw("jwt", "null")
        }
        return writer.json
    }

    static func tokenJSON(_ token: APNSSimulatorTokenState) -> String {
        var writer = JSONObjectWriter()
        writer.string("token", token.token)
        writer.string("topic", token.topic)
        writer.string("unregistered_at", token.unregisteredAt.map { RFC3339.string(from: $0, fractional: true) })
        writer.integer("timestamp", token.unregisteredAt.map(SimulatorRejection.milliseconds))
        return writer.json
    }

    static func channelJSON(_ channel: APNSSimulatorChannel) -> String {
        var writer = JSONObjectWriter()
        writer.string("bundle_id", channel.bundleID)
        writer.string("channel_id", channel.channelID)
        writer.integer("message_storage_policy", channel.storagePolicy.rawValue)
        writer.string("push_type", "LiveActivity")
        writer.string("created_at", RFC3339.string(from: channel.createdAt, fractional: true))
        return writer.json
    }

    static func faultJSON(_ fault: APNSSimulatorFault, id: Int, matched: Int, fired: Int) -> String {
        var writer = JSONObjectWriter()
        writer.integer("id", id)
        switch fault.action {
        case .respond(let status, let reason):
            writer.string("type", "status")
            writer.integer("status", status)
            writer.string("reason", reason.rawValue)
        case .delay(let duration):
            writer.string("type", "latency")
            writer.integer(
                "latency_ms",
                duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
            )
        case .goAway(let after, let reason, let code):
            writer.string("type", "goaway")
            writer.integer("after_streams", after)
            writer.string("reason", reason.rawValue)
            writer.integer("error_code", code)
        case .closeConnection(let after):
            writer.string("type", "close")
            writer.integer("after_streams", after)
        }
        switch fault.action {
        case .respond, .delay:
            writer.integer("every", fault.every)
            writer.string("token", fault.token)
            writer.integer("times", fault.times)
            writer.strings(
                "applies_to",
                APNSSimulatorFault.RequestKind.allCases.filter(fault.appliesTo.contains).map(\.rawValue)
            )
            writer.integer("matched", matched)
            writer.integer("fired", fired)
        case .goAway, .closeConnection:
            break
        }
        return writer.json
    }

    private static func deliveryFilter(_ request: HTTPRequest) -> Result<APNSSimulatorDeliveryFilter, ControlInputError>
    {
        var filter = APNSSimulatorDeliveryFilter(
            token: request.queryValue("token"),
            topic: request.queryValue("topic"),
            pushType: request.queryValue("push_type"),
            channelID: request.queryValue("channel_id"),
            limit: defaultDeliveryLimit
        )
        if let text = request.queryValue("limit") {
            guard let limit = Int(text), limit >= 1 else {
                return .failure(
                    ControlInputError(field: "limit", message: "limit must be a whole number of at least 1.")
                )
            }
            filter.limit = limit
        }
        if let text = request.queryValue("status") {
            guard let status = Int(text) else {
                return .failure(
                    ControlInputError(field: "status", message: "status must be an HTTP status such as 410.")
                )
            }
            filter.status = status
        }
        if let text = request.queryValue("kind") {
            guard let kind = APNSSimulatorDelivery.Kind(rawValue: text) else {
                return .failure(ControlInputError(field: "kind", message: "kind must be device or broadcast."))
            }
            filter.kind = kind
        }
        return .success(filter)
    }
}
