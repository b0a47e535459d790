import APNs
import Foundation
import HTTPRouting
import HeraldCore
import Synchronization

/// The control API's CloudKit routes (docs/SIMULATOR.md, "CloudKit"):
///
/// | route | does |
/// |---|---|
/// | `GET/POST/DELETE /cloudkit/subscriptions[?id=]` | query subscriptions: record type → device tokens |
/// | `GET /cloudkit/records?container=&environment=&record_type=`, `DELETE /cloudkit/records` | the records held |
/// | `GET/POST/DELETE /cloudkit/faults` | `{"server_error_code": "THROTTLED", "retry_after": 2, "times": 1}` |
///
/// Without `--cloudkit-key` each answers 404 saying how to enable CloudKit.
enum CloudKitControlRoutes {
    static func register(on router: inout Router, prefix: String, endpoint: CloudKitEndpoint?) {
        let disabled = HTTPResponse.error(
            status: 404,
            code: "cloudkit_disabled",
            message: "The simulator does not serve CloudKit: start it with --cloudkit-key KEYID:PEM."
        )
        let base = prefix + "/cloudkit"
        func route(_ body: @escaping @Sendable (CloudKitEndpoint, HTTPRequest) -> HTTPResponse) -> Router.Handler {
            { request in endpoint.map { body($0, request) } ?? disabled }
        }
        router.get(
            base + "/subscriptions",
            route { endpoint, _ in
                let subscriptions = endpoint.state.withLock { $0.subscriptions }
                return json(#"{"subscriptions":["# + subscriptions.map(subscriptionJSON).joined(separator: ",") + "]}")
            }
        )
        router.post(
            base + "/subscriptions",
            route { endpoint, request in
                switch CloudKitControlInput.subscription(request.body, limits: endpoint.limits) {
                case .failure(let error):
                    return error.response
                case .success(let subscription):
                    let added = endpoint.state.withLock { state -> Bool in
                        guard state.subscriptions.count < state.subscriptionLimit else { return false }
                        state.subscriptions.append(subscription)
                        return true
                    }
                    guard added else {
                        return .error(
                            status: 409,
                            code: "limit_reached",
                            message:
                                "The simulator already holds \(endpoint.limits.subscriptions) CloudKit subscriptions: "
                                + "DELETE \(base)/subscriptions first."
                        )
                    }
                    return json(subscriptionJSON(subscription), status: 201)
                }
            }
        )
        router.delete(
            base + "/subscriptions",
            route { endpoint, request in
                if let id = request.queryValue("id") {
                    let removed = endpoint.state.withLock { state -> Bool in
                        let before = state.subscriptions.count
                        state.subscriptions.removeAll { $0.id == id }
                        return state.subscriptions.count < before
                    }
                    guard removed else {
                        return .error(
                            status: 404,
                            code: "unknown_subscription",
                            message: "No CloudKit subscription has that id."
                        )
                    }
                } else {
                    endpoint.state.withLock { $0.subscriptions.removeAll() }
                }
                return HTTPResponse(status: 204)
            }
        )
        router.get(
            base + "/records",
            route { endpoint, request in
                let container = request.queryValue("container")
                let environment = request.queryValue("environment")
                let recordType = request.queryValue("record_type")
                let records = endpoint.state.withLock { state in
                    state.databases.flatMap { key, records -> [(String, CloudKitStoredRecord)] in
                        let parts = key.split(separator: "/").map(String.init)
                        guard container.map({ $0 == parts[0] }) ?? true, environment.map({ $0 == parts[1] }) ?? true
                        else {
                            return []
                        }
                        return records.values.map { (key, $0) }
                    }
                }
                let matching = records.filter { recordType == nil || $0.1.recordType == recordType }
                    .sorted { $0.1.sequence < $1.1.sequence }
                let entries = matching.map { key, record in
                    let parts = key.split(separator: "/").map(String.init)
                    return
                        #"{"container":\#(JSONText.quote(parts[0])),"environment":\#(JSONText.quote(parts[1])),"record":\#(record.json)}"#
                }
                return json(#"{"records":["# + entries.joined(separator: ",") + "]}")
            }
        )
        router.delete(
            base + "/records",
            route { endpoint, _ in
                endpoint.state.withLock { state in
                    state.databases.removeAll()
                    state.recordCount = 0
                }
                return HTTPResponse(status: 204)
            }
        )
        router.get(
            base + "/faults",
            route { endpoint, _ in
                let faults = endpoint.state.withLock { $0.faults }
                return json(
                    #"{"faults":["#
                        + faults.map { faultJSON($0.fault, id: $0.id, fired: $0.fired) }.joined(separator: ",") + "]}"
                )
            }
        )
        router.post(
            base + "/faults",
            route { endpoint, request in
                switch CloudKitControlInput.fault(request.body) {
                case .failure(let error):
                    return error.response
                case .success(let fault):
                    guard let id = endpoint.state.withLock({ $0.addFault(fault) }) else {
                        return .error(
                            status: 409,
                            code: "limit_reached",
                            message:
                                "The simulator already holds \(endpoint.limits.faults) CloudKit faults: DELETE \(base)/faults first."
                        )
                    }
                    return json(faultJSON(fault, id: id, fired: 0), status: 201)
                }
            }
        )
        router.delete(
            base + "/faults",
            route { endpoint, _ in
                endpoint.state.withLock { $0.faults.removeAll() }
                return HTTPResponse(status: 204)
            }
        )
    }

    private static func json(_ text: String, status: Int = 200) -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": "application/json"], body: Array(text.utf8))
    }

    static func subscriptionJSON(_ subscription: APNSSimulatorCloudKitSubscription) -> String {
        var writer = JSONObjectWriter()
        writer.string("id", subscription.id)
        writer.string("container", subscription.container)
        writer.string("environment", subscription.environment)
        writer.string("record_type", subscription.recordType)
        writer.strings("tokens", subscription.tokens)
        writer.string("topic", subscription.topic)
        return writer.json
    }

    static func faultJSON(_ fault: APNSSimulatorCloudKitFault, id: Int, fired: Int) -> String {
        var writer = JSONObjectWriter()
        writer.integer("id", id)
        writer.string("server_error_code", fault.serverErrorCode)
        writer.integer("status", fault.status)
        writer.integer("retry_after", fault.retryAfter)
        writer.integer("times", fault.times)
        writer.string("operation", fault.operation)
        writer.integer("fired", fired)
        return writer.json
    }
}
