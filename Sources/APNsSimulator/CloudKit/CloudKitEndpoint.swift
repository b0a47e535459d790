import APNs
import Foundation
import HTTP2
import HeraldCore
import Synchronization

/// The simulator's CloudKit Web Services endpoint, served on its HTTP/2 listener when CloudKit
/// keys are configured: `POST /database/1/{container}/{environment}/public/records/modify` and
/// `…/records/query`, authenticated like CloudKit's server-to-server keys, answering in CloudKit's
/// JSON shapes. Records live in memory (bounded); created records fire the configured query
/// subscriptions as silent pushes recorded in the simulator's deliveries.
final class CloudKitEndpoint: Sendable {
    /// The bounds of every input (each answered with a 4xx when passed).
    struct Limits: Sendable {
        var records = 100_000
        var subscriptions = 1_000
        var tokensPerSubscription = 1_000
        var faults = 100
        /// Operations in one `records/modify`; CloudKit's own limit.
        var operations = 200
        /// `resultsLimit` at most; CloudKit's own limit.
        var results = 200
        /// Fields of one record.
        var fields = 200
        /// Bytes of a record type, field name or record name.
        var nameBytes = 255
        var filters = 20
        var sorts = 5
    }

    let limits: Limits
    let state: Mutex<CloudKitSimulatorState>
    private let authenticator: CloudKitAuthenticator
    private let deliveries: SimulatorStore

    init(keys: [APNSSimulatorCloudKitKey], limits: Limits, maximumSkew: TimeInterval, deliveries: SimulatorStore) {
        self.limits = limits
        self.authenticator = CloudKitAuthenticator(
            keys: Dictionary(keys.map { ($0.keyID, $0.publicKey) }, uniquingKeysWith: { _, last in last }),
            maximumSkew: maximumSkew
        )
        self.deliveries = deliveries
        self.state = Mutex(
            CloudKitSimulatorState(
                recordLimit: limits.records,
                subscriptionLimit: limits.subscriptions,
                faultLimit: limits.faults
            )
        )
    }

    /// A CloudKit error answer.
    static func error(_ status: Int, _ code: String, _ reason: String, retryAfter: Int? = nil) -> HTTP2ServerResponse {
        var headers = HTTP2Headers()
        headers.add(name: "content-type", value: "application/json; charset=UTF-8")
        let body = CloudKitJSON.error(code: code, reason: reason, retryAfter: retryAfter)
        return HTTP2ServerResponse(status: status, headers: headers, body: Array(body.utf8))
    }

    static func ok(_ json: String) -> HTTP2ServerResponse {
        var headers = HTTP2Headers()
        headers.add(name: "content-type", value: "application/json; charset=UTF-8")
        return HTTP2ServerResponse(status: 200, headers: headers, body: Array(json.utf8))
    }

    /// The answer to a request whose path starts with `/database/`.
    func respond(to request: HTTP2ServerRequest, now: Date) -> HTTP2ServerResponse {
        let path =
            request.path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init)
            ?? ""
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        // "", "database", "1", container, environment, database, "records", operation
        guard parts.count == 8, parts[1] == "database", parts[2] == "1", parts[6] == "records" else {
            return Self.error(
                404,
                "NOT_FOUND",
                "No such CloudKit endpoint: the simulator serves POST /database/1/{container}/{environment}/public/records/modify and records/query"
            )
        }
        let (container, environment, database, operation) = (parts[3], parts[4], parts[5], parts[7])
        guard operation == "modify" || operation == "query" else {
            return Self.error(
                404,
                "NOT_FOUND",
                "records/\(operation.prefix(40)) is not served by the simulator: use records/modify or records/query"
            )
        }
        guard request.method == "POST" else {
            return Self.error(400, "BAD_REQUEST", "records/\(operation) takes POST, not \(request.method.prefix(10))")
        }
        guard container.hasPrefix("iCloud."), container.utf8.count <= 255, container.utf8.count > 7 else {
            return Self.error(400, "BAD_REQUEST", "'\(container.prefix(80))' is not a container identifier (iCloud.…)")
        }
        guard environment == "production" || environment == "development" else {
            return Self.error(
                400,
                "BAD_REQUEST",
                "environment must be production or development, not '\(environment.prefix(40))'"
            )
        }
        let headers = request.headers
        if let failure = authenticator.failure(
            headers: { name in headers.first { $0.name.lowercased() == name }?.value },
            body: request.body,
            path: path,
            now: now
        ) {
            return Self.error(401, "AUTHENTICATION_FAILED", failure)
        }
        guard database == "public" else {
            return Self.error(
                403,
                "ACCESS_DENIED",
                "server-to-server keys can access the public database only, not '\(database.prefix(40))'"
            )
        }
        if let fault = state.withLock({ $0.fireFault(operation: operation) }) {
            return Self.error(
                fault.status,
                fault.serverErrorCode,
                "injected by the simulator's CloudKit faults",
                retryAfter: fault.retryAfter
            )
        }
        guard let body = try? APNSJSONValue(parsing: request.body), let object = body.objectValue else {
            return Self.error(400, "BAD_REQUEST", "the request body must be a JSON object")
        }
        let databaseKey = CloudKitSimulatorState.databaseKey(container: container, environment: environment)
        switch operation {
        case "modify":
            let (response, pushes) = modify(object, database: databaseKey, now: now)
            for push in pushes {
                record(
                    push,
                    container: container,
                    environment: environment,
                    now: now,
                    connectionID: request.connectionID
                )
            }
            return response
        default:
            return query(object, database: databaseKey)
        }
    }

    /// A silent push a created record fires through a subscription.
    struct SubscriptionPush: Sendable {
        var subscription: APNSSimulatorCloudKitSubscription
        var recordName: String
    }

    /// Records the subscription's silent push (background, priority 5) as delivered to each token.
    private func record(_ push: SubscriptionPush, container: String, environment: String, now: Date, connectionID: Int)
    {
        let ck =
            #"{"ce":2,"cid":\#(JSONText.quote(container)),"ckuuid":\#(JSONText.quote(UUID().uuidString)),"#
            + #""nid":\#(JSONText.quote(UUID().uuidString)),"#
            + #""qry":{"dbs":2,"fo":1,"rid":\#(JSONText.quote(push.recordName)),"sid":\#(JSONText.quote(push.subscription.id)),"#
            + #""zid":"_defaultZone","zoid":"_defaultOwner"}}"#
        let payload = Array(#"{"aps":{"content-available":1},"ck":\#(ck)}"#.utf8)
        deliveries.withState { state in
            for token in push.subscription.tokens {
                let apnsID = SimulatorCore.makeID()
                state.deliveries.append(
                    APNSSimulatorDelivery(
                        id: APNSIdentifier.next(),
                        receivedAt: now,
                        kind: .device,
                        connectionID: connectionID,
                        token: token,
                        topic: push.subscription.topic,
                        pushType: "background",
                        priority: 5,
                        expiration: nil,
                        collapseID: nil,
                        apnsID: apnsID,
                        requestID: nil,
                        channelID: nil,
                        status: 200,
                        reason: nil,
                        timestamp: nil,
                        payload: payload,
                        providerToken: nil
                    )
                )
            }
        }
    }
}
