import APNs
import Foundation
import HTTP2
import HeraldCore

/// Answers the simulator's HTTP/2 requests: routes, validates (pure checks, then the connection's
/// provider-token state, then the shared store), applies faults, records, and raises the
/// connection's stream limit after its first success.
final class SimulatorCore: Sendable {
    let store: SimulatorStore
    let connections = ConnectionRegistry()
    private let devices: DevicePushValidator
    private let broadcasts: BroadcastValidator
    private let channelRequests: ChannelRequestValidator
    private let verifier: ProviderTokenVerifier
    private let rules: ProviderTokenRules
    private let maxConcurrentStreams: Int
    private let streamLimitAfterRejection: Int?
    /// Whether silent pushes carrying `live-activity` reach the virtual devices.
    private let applySilentLiveActivity: Bool
    /// The environment played, for environment-bound keys and certificates; nil: either.
    private let environment: APNSEnvironment?
    let clock: any HeraldClock
    private let logger: Logger
    /// CloudKit's endpoints, when keys are configured (`/database/…` paths).
    let cloudKit: CloudKitEndpoint?

    init(configuration: APNSSimulator.Configuration) {
        let apps = SimulatorApps(
            bundleIDs: configuration.topics,
            broadcastDisabled: configuration.broadcastDisabledTopics
        )
        self.store = SimulatorStore(
            deliveryCapacity: configuration.deliveryCapacity,
            channelLimit: configuration.channelLimit,
            totalChannelLimit: configuration.totalChannelLimit,
            tokenLimit: configuration.tokenLimit,
            faultLimit: configuration.faultLimit,
            devices: VirtualDeviceRegistry(
                deviceLimit: configuration.virtualDeviceLimit,
                activityLimit: configuration.activitiesPerDeviceLimit
            )
        )
        self.devices = DevicePushValidator(apps: apps, malformedPayloadReason: configuration.malformedPayloadReason)
        self.broadcasts = BroadcastValidator(apps: apps)
        self.channelRequests = ChannelRequestValidator(apps: apps)
        self.verifier = ProviderTokenVerifier(
            keys: configuration.keys,
            teamID: configuration.teamID,
            environment: configuration.environment
        )
        self.rules = configuration.providerTokenRules
        self.maxConcurrentStreams = configuration.maxConcurrentStreams
        self.streamLimitAfterRejection = configuration.streamLimitAfterRejection
        self.applySilentLiveActivity = configuration.applySilentLiveActivity
        self.environment = configuration.environment
        self.clock = configuration.clock
        self.logger = configuration.logger
        var cloudKitLimits = CloudKitEndpoint.Limits()
        cloudKitLimits.records = configuration.cloudKitRecordLimit
        self.cloudKit =
            configuration.cloudKitKeys.isEmpty
            ? nil
            : CloudKitEndpoint(
                keys: configuration.cloudKitKeys,
                limits: cloudKitLimits,
                maximumSkew: configuration.cloudKitClockSkew.timeInterval,
                deliveries: store
            )
    }

    /// The answer to one request on listener `listener`.
    func respond(to request: HTTP2ServerRequest, listener: Int) async -> HTTP2ServerResponse {
        let now = clock.now()
        if let cloudKit, request.path.hasPrefix("/database/") {
            let response = cloudKit.respond(to: request, now: now)
            // As for pushes: a connection's first success raises its stream limit.
            let connection = connections.connection(for: request.connection, listener: listener)
            if response.status == 200, connection.claimFirstSuccess() {
                request.connection.setMaxConcurrentStreams(maxConcurrentStreams)
            }
            return response
        }
        let connection = connections.connection(for: request.connection, listener: listener)
        var input = SimulatorRequest(
            method: request.method,
            path: request.path,
            headers: request.headers,
            body: request.body
        )
        let route = SimulatorRoute(path: input.path)
        let credentials = certificateCheck(&input, route: route, connection: connection)
        let response: HTTP2ServerResponse
        let effects: FaultEffects
        switch route {
        case .device(let token):
            (response, effects) = device(
                input,
                token: token,
                connection: connection,
                credentials: credentials,
                now: now
            )
        case .broadcast(let bundleID):
            (response, effects) = broadcast(
                input,
                bundleID: bundleID,
                connection: connection,
                credentials: credentials,
                now: now
            )
        case .channels, .allChannels:
            (response, effects) = channel(
                input,
                route: route,
                connection: connection,
                credentials: credentials,
                now: now
            )
        case .unknown:
            let (stream, _) = connection.beginRequest(
                authorization: nil,
                authenticate: false,
                now: now,
                rules: rules,
                verifier: verifier
            )
            effects = store.effects(streamNumber: stream)
            response = Self.errorResponse(.badPath, idHeader: nil)
        }
        if logger.logLevel <= .debug, response.status >= 300 {
            logger.debug(
                "request refused",
                metadata: [
                    "connection": .int(connection.id), "status": .int(response.status),
                    "reason": .string(SimulatorRejection.reason(in: response.body) ?? ""),
                ]
            )
        }
        if effects.delay > .zero {
            try? await clock.sleep(for: effects.delay)
        }
        if effects.close {
            request.connection.closeAbruptly()
            return .reset(.cancel)
        }
        if (200..<300).contains(response.status) {
            if connection.claimFirstSuccess() || connection.claimRestoring() {
                // Sent before the response: the client sees the higher limit when its request completes.
                request.connection.setMaxConcurrentStreams(maxConcurrentStreams)
            }
        } else if let lowered = streamLimitAfterRejection, response.status >= 400, route.isPush,
            connection.claimLowering()
        {
            request.connection.setMaxConcurrentStreams(lowered)
        }
        if let goAway = effects.goAway {
            request.connection.goAway(
                errorCode: HTTP2ErrorCode(rawValue: goAway.errorCode),
                debugData: String(decoding: SimulatorRejection(status: 0, reason: goAway.reason).body, as: UTF8.self)
            )
        }
        return response
    }

    /// How a request's connection authenticates it: by provider token, or by its certificate,
    /// which has already been checked (then `rejection` says what it refused).
    private struct CredentialCheck {
        var usesToken: Bool
        var rejection: SimulatorRejection?
    }

    /// On a certificate-based connection: the certificate's verdict for this request, and the
    /// bundle ID added as `apns-topic` to a device push that names none (single-topic
    /// certificates, APNS.md §2.2). Broadcasts and channel requests name their app in the path,
    /// which must be one of the certificate's topics (403 `TopicMismatch`).
    private func certificateCheck(
        _ request: inout SimulatorRequest,
        route: SimulatorRoute,
        connection: SimulatorConnection
    ) -> CredentialCheck {
        switch connection.credentials {
        case .providerToken:
            return CredentialCheck(usesToken: true)
        case .unusableCertificate:
            return CredentialCheck(usesToken: false, rejection: .forbidden(.badCertificate))
        case .certificate(let identity):
            if let refusal = identity.refusal(in: environment) {
                return CredentialCheck(usesToken: false, rejection: refusal)
            }
            switch route {
            case .device:
                switch identity.topic(for: request.header("apns-topic")) {
                case .success(let topic):
                    if request.header("apns-topic") == nil {
                        var headers = request.headers
                        headers.add(name: "apns-topic", value: topic)
                        request.headers = headers
                    }
                    return CredentialCheck(usesToken: false)
                case .failure(let rejection):
                    return CredentialCheck(usesToken: false, rejection: rejection)
                }
            case .broadcast(let bundleID), .channels(let bundleID), .allChannels(let bundleID):
                let allowed = identity.topics.contains(bundleID)
                return CredentialCheck(usesToken: false, rejection: allowed ? nil : .forbidden(.topicMismatch))
            case .unknown:
                return CredentialCheck(usesToken: false)
            }
        }
    }

    /// The steps every route shares: the route's early header checks, then the credentials — the
    /// provider token, or the connection's certificate — (only when those passed), then the
    /// route's own checks (only when both passed).
    private func admit<Checked>(
        _ request: SimulatorRequest,
        connection: SimulatorConnection,
        credentials: CredentialCheck,
        now: Date,
        early: SimulatorRejection?,
        then check: () -> Result<Checked, SimulatorRejection>
    ) -> (stream: Int, authentication: AuthenticationResult?, checked: Checked?, rejection: SimulatorRejection?) {
        let (stream, authentication) = connection.beginRequest(
            authorization: request.header("authorization"),
            authenticate: early == nil && credentials.usesToken,
            now: now,
            rules: rules,
            verifier: verifier
        )
        let credentialRejection = credentials.usesToken ? authentication?.rejection : credentials.rejection
        guard let rejection = early ?? credentialRejection else {
            switch check() {
            case .success(let checked): return (stream, authentication, checked, nil)
            case .failure(let refusal): return (stream, authentication, nil, refusal)
            }
        }
        return (stream, authentication, nil, rejection)
    }

    /// The request's id header when it is a UUID (APNs echoes it), else a fresh one.
    private static func echoedID(_ request: SimulatorRequest, header: String) -> String {
        request.header(header).flatMap { HeaderRules.isUUID($0) ? $0 : nil } ?? makeID()
    }

    // MARK: Device pushes

    private func device(
        _ request: SimulatorRequest,
        token: String,
        connection: SimulatorConnection,
        credentials: CredentialCheck,
        now: Date
    ) -> (HTTP2ServerResponse, FaultEffects) {
        let (stream, authentication, push, rejection) = admit(
            request,
            connection: connection,
            credentials: credentials,
            now: now,
            early: devices.checkRequest(request, token: token)
        ) { devices.checkNotification(request, token: token) }
        let apnsID = Self.echoedID(request, header: "apns-id")
        var record = APNSSimulatorDelivery(
            id: APNSIdentifier.next(),
            receivedAt: now,
            kind: .device,
            connectionID: connection.id,
            token: token.isEmpty ? nil : token.lowercased(),
            topic: request.header("apns-topic"),
            pushType: request.header("apns-push-type"),
            priority: request.header("apns-priority").flatMap { Int($0) },
            expiration: request.header("apns-expiration").flatMap { Int64($0) },
            collapseID: request.header("apns-collapse-id"),
            apnsID: apnsID,
            requestID: nil,
            channelID: nil,
            status: 0,
            reason: nil,
            timestamp: nil,
            payload: request.body,
            providerToken: authentication?.claims.map(Self.providerToken)
        )
        let virtual = push.flatMap {
            VirtualDeviceInput.parse(pushType: $0.pushType, body: request.body, applySilent: applySilentLiveActivity)
        }
        let effects = store.finishDevice(
            &record,
            push: push,
            rejection: rejection,
            streamNumber: stream,
            now: now,
            virtual: virtual
        )
        return (Self.answer(record, idHeader: ("apns-id", apnsID)), effects)
    }

    /// 200 with the id header and an `apns-unique-id`, or the recorded refusal.
    private static func answer(_ record: APNSSimulatorDelivery, idHeader: (String, String)) -> HTTP2ServerResponse {
        if record.status == 200 {
            var headers = HTTP2Headers()
            headers.add(name: idHeader.0, value: idHeader.1, neverIndex: true)
            headers.add(name: "apns-unique-id", value: makeID(), neverIndex: true)
            return HTTP2ServerResponse(status: 200, headers: headers)
        }
        let refusal = SimulatorRejection(
            status: record.status,
            reason: record.reason ?? .internalServerError,
            timestamp: record.timestamp
        )
        return errorResponse(refusal, idHeader: idHeader)
    }

    // MARK: Broadcasts

    private func broadcast(
        _ request: SimulatorRequest,
        bundleID: String,
        connection: SimulatorConnection,
        credentials: CredentialCheck,
        now: Date
    ) -> (HTTP2ServerResponse, FaultEffects) {
        let (stream, authentication, push, rejection) = admit(
            request,
            connection: connection,
            credentials: credentials,
            now: now,
            early: broadcasts.checkRequest(request)
        ) { broadcasts.checkBroadcast(request, bundleID: bundleID) }
        let requestID = Self.echoedID(request, header: "apns-request-id")
        var record = APNSSimulatorDelivery(
            id: APNSIdentifier.next(),
            receivedAt: now,
            kind: .broadcast,
            connectionID: connection.id,
            token: nil,
            topic: bundleID,
            pushType: request.header("apns-push-type"),
            priority: request.header("apns-priority").flatMap { Int($0) },
            expiration: request.header("apns-expiration").flatMap { Int64($0) },
            collapseID: nil,
            apnsID: nil,
            requestID: requestID,
            channelID: request.header("apns-channel-id"),
            status: 0,
            reason: nil,
            timestamp: nil,
            payload: request.body,
            providerToken: authentication?.claims.map(Self.providerToken)
        )
        let effects = store.finishBroadcast(
            &record,
            push: push,
            rejection: rejection,
            streamNumber: stream,
            now: now,
            message: push.flatMap { _ in VirtualDeviceInput.broadcast(body: request.body) }
        )
        return (Self.answer(record, idHeader: ("apns-request-id", requestID)), effects)
    }

    // MARK: Channel management

    private func channel(
        _ request: SimulatorRequest,
        route: SimulatorRoute,
        connection: SimulatorConnection,
        credentials: CredentialCheck,
        now: Date
    ) -> (HTTP2ServerResponse, FaultEffects) {
        let (stream, _, checked, rejection) = admit(
            request,
            connection: connection,
            credentials: credentials,
            now: now,
            early: channelRequests.checkRequest(request, route: route)
        ) { channelRequests.checkOperation(request, route: route) }
        let requestID = Self.echoedID(request, header: "apns-request-id")
        let (result, effects) = store.finishChannelRequest(
            checked,
            rejection: rejection,
            streamNumber: stream,
            now: now
        )
        var headers = HTTP2Headers()
        headers.add(name: "apns-request-id", value: requestID, neverIndex: true)
        switch result {
        case .created(let channel):
            headers.add(name: "apns-channel-id", value: channel.channelID)
            return (HTTP2ServerResponse(status: 201, headers: headers), effects)
        case .read(let channel):
            headers.add(name: "content-type", value: "application/json")
            let body = #"{"message-storage-policy":\#(channel.storagePolicy.rawValue),"push-type":"LiveActivity"}"#
            return (HTTP2ServerResponse(status: 200, headers: headers, body: Array(body.utf8)), effects)
        case .deleted:
            return (HTTP2ServerResponse(status: 204, headers: headers), effects)
        case .list(let ids):
            headers.add(name: "content-type", value: "application/json")
            let body = #"{"channels":["# + ids.map(JSONText.quote).joined(separator: ",") + "]}"
            return (HTTP2ServerResponse(status: 200, headers: headers, body: Array(body.utf8)), effects)
        case .rejected(let refusal):
            return (Self.errorResponse(refusal, idHeader: ("apns-request-id", requestID)), effects)
        }
    }

    // MARK: Helpers

    private static func errorResponse(
        _ rejection: SimulatorRejection,
        idHeader: (name: String, value: String)?
    ) -> HTTP2ServerResponse {
        var headers = HTTP2Headers()
        if let idHeader { headers.add(name: idHeader.name, value: idHeader.value, neverIndex: true) }
        headers.add(name: "content-type", value: "application/json")
        return HTTP2ServerResponse(status: rejection.status, headers: headers, body: rejection.body)
    }

    private static func providerToken(_ claims: ProviderTokenClaims) -> APNSSimulatorDelivery.ProviderToken {
        APNSSimulatorDelivery.ProviderToken(keyID: claims.keyID, teamID: claims.teamID, issuedAt: claims.issuedAt)
    }

    /// A lowercase UUID, as APNs generates for `apns-id` and `apns-unique-id`. Not Foundation's
    /// `UUID()`, which reads the kernel's random source and formats with `sprintf` per call.
    static func makeID() -> String {
        APNSIdentifier.lowercaseString(APNSIdentifier.next())
    }
}

extension SimulatorRejection {
    /// The `reason` of a body the simulator produced (for logs).
    static func reason(in body: [UInt8]) -> String? {
        APNSErrorBody(parsing: body).reason?.rawValue
    }
}
