import APNs

/// A broadcast that passed every header and payload check; whether its channel exists (and
/// accepts its expiration) is for the store to say.
struct BroadcastPush: Sendable, Hashable {
    var bundleID: String
    var channelID: String
    var priority: APNSPriority
    var expiration: Int64
    /// The `apns-request-id` as sent, if any.
    var requestID: String?
}

/// APNs' checks on broadcasts, `POST /4/broadcasts/apps/<bundle ID>` (APNS.md §7), in order:
///
/// 1. `:method` other than `POST` → 405 `MethodNotAllowed`;
/// 2. a header field repeated → `DuplicateHeaders`;
/// 3. the provider token → 403/429;
/// 4. the bundle ID with a push-type suffix → `TopicDisallowed`; an app the simulator does not
///    serve → 403 `TopicMismatch`; an app without the Broadcast Capability → `FeatureNotEnabled`;
/// 5. `apns-request-id` not a UUID → `BadMessageId`;
/// 6. no `apns-channel-id` → `MissingChannelId`; not base64 → `BadChannelId`;
/// 7. no `apns-push-type` → `MissingPushType`; other than `liveactivity` (any case) →
///    `InvalidPushType`;
/// 8. `apns-priority` absent or not 10, 5, 1 → `BadPriority`;
/// 9. `apns-expiration` absent or not whole seconds → `BadExpirationDate`;
/// 10. the payload empty → `PayloadEmpty`, over 5120 bytes → 413 `PayloadTooLarge`, not a JSON
///     object → `BadRequestPayload`.
///
/// Then, in the store: an unknown channel → `ChannelNotRegistered`; a nonzero expiration on a
/// policy-0 channel → `BadExpirationDate`.
struct BroadcastValidator: Sendable {
    /// The largest broadcast payload.
    static let maxPayloadSize = 5120

    var apps: SimulatorApps

    /// Steps 1–2 (and the route's shape), before authentication.
    func checkRequest(_ request: SimulatorRequest) -> SimulatorRejection? {
        if request.method != "POST" { return .methodNotAllowed }
        if request.hasDuplicateHeaders { return .badRequest(.duplicateHeaders) }
        return nil
    }

    /// Steps 4–10, after authentication.
    func checkBroadcast(_ request: SimulatorRequest, bundleID: String) -> Result<BroadcastPush, SimulatorRejection> {
        if let rejection = apps.checkBroadcastApp(bundleID) { return .failure(rejection) }
        let requestID = request.header("apns-request-id")
        if let requestID, !HeaderRules.isUUID(requestID) { return .failure(.badRequest(.badMessageId)) }
        guard let channelID = request.header("apns-channel-id") else {
            return .failure(.badRequest(.missingChannelId))
        }
        guard Self.isWellFormedChannelID(channelID) else { return .failure(.badRequest(.badChannelId)) }
        guard let pushType = request.header("apns-push-type") else {
            return .failure(.badRequest(.missingPushType))
        }
        guard pushType.lowercased() == APNSPushType.liveActivity.headerValue else {
            return .failure(.badRequest(.invalidPushType))
        }
        guard let priority = request.header("apns-priority").flatMap(APNSPriority.init(headerValue:)) else {
            return .failure(.badRequest(.badPriority))
        }
        guard let expiration = request.header("apns-expiration").flatMap(HeaderRules.expiration) else {
            return .failure(.badRequest(.badExpirationDate))
        }
        if let rejection = HeaderRules.checkPayload(
            request.body,
            limit: Self.maxPayloadSize,
            malformedReason: .badRequestPayload
        ) {
            return .failure(rejection)
        }
        return .success(
            BroadcastPush(
                bundleID: bundleID,
                channelID: channelID,
                priority: priority,
                expiration: expiration,
                requestID: requestID
            )
        )
    }

    /// All steps up to the store, with `authenticate` standing for step 3.
    func validate(
        _ request: SimulatorRequest,
        authenticate: (SimulatorRequest) -> SimulatorRejection? = { _ in nil }
    ) -> Result<BroadcastPush, SimulatorRejection> {
        guard case .broadcast(let bundleID) = SimulatorRoute(path: request.path) else { return .failure(.badPath) }
        if let rejection = checkRequest(request) { return .failure(rejection) }
        if let rejection = authenticate(request) { return .failure(rejection) }
        return checkBroadcast(request, bundleID: bundleID)
    }

    /// Base64 (standard or URL alphabet, optional padding), at most 1024 bytes.
    static func isWellFormedChannelID(_ id: String) -> Bool {
        (try? APNSChannelID(rawValue: id).validate()) != nil
    }
}
