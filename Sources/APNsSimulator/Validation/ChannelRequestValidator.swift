import APNs
import HeraldCore

/// A channel management operation that passed every check that does not depend on the store.
enum ChannelOperation: Sendable, Hashable {
    case create(APNSChannelMessageStoragePolicy)
    case read(channelID: String)
    case delete(channelID: String)
    case listAll
}

/// A checked channel management request.
struct ChannelRequest: Sendable, Hashable {
    var bundleID: String
    var operation: ChannelOperation
    /// The `apns-request-id` as sent, if any.
    var requestID: String?
}

/// APNs' checks on broadcast channel management, `/1/apps/<bundle ID>/channels` and
/// `/all-channels` (APNS.md §7), in order:
///
/// 1. a method the path does not take (`channels`: POST, GET, DELETE; `all-channels`: GET) →
///    405 `MethodNotAllowed`;
/// 2. a header field repeated → `DuplicateHeaders`;
/// 3. the provider token → 403/429;
/// 4. the bundle ID as for broadcasts (`TopicDisallowed`, 403 `TopicMismatch`,
///    `FeatureNotEnabled`);
/// 5. `apns-request-id` not a UUID → `BadMessageId`;
/// 6. create: an empty body → `PayloadEmpty`; not a JSON object → `BadRequestPayload`; an
///    attribute other than `message-storage-policy` and `push-type` → `BadRequestParams`; no
///    `push-type` → `MissingPushType`; not `LiveActivity` → `InvalidPushType`; the policy absent
///    or not 0 or 1 → `BadRequestParams`;
///    read, delete: no `apns-channel-id` → `MissingChannelId`; not base64 → `BadChannelId`.
///
/// Then, in the store: the 10,000-channel limit → `CannotCreateChannelConfig`; an unknown
/// channel → `ChannelNotRegistered`.
struct ChannelRequestValidator: Sendable {
    /// The largest create body read.
    static let maxBodySize = 4096

    var apps: SimulatorApps

    /// Steps 1–2.
    func checkRequest(_ request: SimulatorRequest, route: SimulatorRoute) -> SimulatorRejection? {
        if !route.allowedMethods.contains(request.method) { return .methodNotAllowed }
        if request.hasDuplicateHeaders { return .badRequest(.duplicateHeaders) }
        return nil
    }

    /// Steps 4–6.
    func checkOperation(
        _ request: SimulatorRequest,
        route: SimulatorRoute
    ) -> Result<ChannelRequest, SimulatorRejection> {
        let bundleID: String
        switch route {
        case .channels(let app), .allChannels(let app): bundleID = app
        default: return .failure(.badPath)
        }
        if let rejection = apps.checkBroadcastApp(bundleID) { return .failure(rejection) }
        let requestID = request.header("apns-request-id")
        if let requestID, !HeaderRules.isUUID(requestID) { return .failure(.badRequest(.badMessageId)) }
        let operation: ChannelOperation
        switch (route, request.method) {
        case (.allChannels, _):
            operation = .listAll
        case (_, "POST"):
            switch Self.storagePolicy(request.body) {
            case .success(let policy): operation = .create(policy)
            case .failure(let rejection): return .failure(rejection)
            }
        default:
            guard let channelID = request.header("apns-channel-id") else {
                return .failure(.badRequest(.missingChannelId))
            }
            guard BroadcastValidator.isWellFormedChannelID(channelID) else {
                return .failure(.badRequest(.badChannelId))
            }
            operation = request.method == "GET" ? .read(channelID: channelID) : .delete(channelID: channelID)
        }
        return .success(ChannelRequest(bundleID: bundleID, operation: operation, requestID: requestID))
    }

    /// All steps up to the store, with `authenticate` standing for step 3.
    func validate(
        _ request: SimulatorRequest,
        authenticate: (SimulatorRequest) -> SimulatorRejection? = { _ in nil }
    ) -> Result<ChannelRequest, SimulatorRejection> {
        let route = SimulatorRoute(path: request.path)
        switch route {
        case .channels, .allChannels: break
        default: return .failure(.badPath)
        }
        if let rejection = checkRequest(request, route: route) { return .failure(rejection) }
        if let rejection = authenticate(request) { return .failure(rejection) }
        return checkOperation(request, route: route)
    }

    /// Reads `{"message-storage-policy": 0|1, "push-type": "LiveActivity"}`.
    static func storagePolicy(_ body: [UInt8]) -> Result<APNSChannelMessageStoragePolicy, SimulatorRejection> {
        if body.isEmpty { return .failure(.badRequest(.payloadEmpty)) }
        if body.count > maxBodySize { return .failure(.payloadTooLarge) }
        guard HeaderRules.isJSONObject(body), let object = (try? APNSJSONValue(parsing: body))?.objectValue else {
            return .failure(.badRequest(.badRequestPayload))
        }
        if object.keys.contains(where: { $0 != "message-storage-policy" && $0 != "push-type" }) {
            return .failure(.badRequest(.badRequestParams))
        }
        guard let pushType = object["push-type"] else { return .failure(.badRequest(.missingPushType)) }
        guard pushType.stringValue?.lowercased() == "liveactivity" else {
            return .failure(.badRequest(.invalidPushType))
        }
        guard case .integer(let number)? = object["message-storage-policy"],
            let policy = APNSChannelMessageStoragePolicy(rawValue: Int(number))
        else { return .failure(.badRequest(.badRequestParams)) }
        return .success(policy)
    }
}
