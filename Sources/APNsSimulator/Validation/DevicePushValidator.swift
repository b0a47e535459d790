import APNs

/// A device push that passed every header and payload check.
struct DevicePush: Sendable, Hashable {
    /// Lowercase.
    var token: String
    var topic: String
    var bundleID: String
    var pushType: APNSPushType
    var priority: APNSPriority
    var expiration: Int64?
    var collapseID: String?
}

/// APNs' checks on `POST /3/device/<token>` (APNS.md §3–§5, §8), as pure functions of the
/// request, in the order the simulator applies them:
///
/// 1. `:method` other than `POST` → 405 `MethodNotAllowed`;
/// 2. no token in the path → `MissingDeviceToken`; not 64–200 hex digits, even → `BadDeviceToken`;
/// 3. a header field repeated → `DuplicateHeaders`;
/// 4. the provider token (``ConnectionAuthentication``) → 403/429;
/// 5. no `apns-topic` → `MissingTopic`; not a bundle-ID-like string → `BadTopic`;
/// 6. `apns-push-type` not one APNs knows → `InvalidPushType` (absent: `alert`, as APNs assumes
///    outside watchOS);
/// 7. the topic without the push type's suffix, with another type's suffix, or for an app the
///    simulator does not serve → `TopicDisallowed`;
/// 8. `apns-priority` not 10, 5 or 1, or not allowed for the type (background: 5 only;
///    location and Live Activity: 10 or 5) → `BadPriority`;
/// 9. `apns-id` not a UUID → `BadMessageId`;
/// 10. `apns-collapse-id` over 64 bytes → `BadCollapseId`;
/// 11. `apns-expiration` not whole seconds → `BadExpirationDate`;
/// 12. the payload empty → `PayloadEmpty`, over the type's limit (VoIP 5120, others 4096) →
///     413 `PayloadTooLarge`, not a JSON object → the configured malformed-payload reason.
///
/// What depends on registered tokens (410 `Unregistered`, `DeviceTokenNotForTopic`) and faults
/// comes after, in the simulator's store.
struct DevicePushValidator: Sendable {
    var apps: SimulatorApps
    var malformedPayloadReason: APNSErrorReason

    /// Steps 1–3, before authentication.
    func checkRequest(_ request: SimulatorRequest, token: String) -> SimulatorRejection? {
        if request.method != "POST" { return .methodNotAllowed }
        if token.isEmpty { return .badRequest(.missingDeviceToken) }
        if !HeaderRules.isWellFormedDeviceToken(token) { return .badRequest(.badDeviceToken) }
        if request.hasDuplicateHeaders { return .badRequest(.duplicateHeaders) }
        return nil
    }

    /// Steps 5–12, after authentication.
    func checkNotification(_ request: SimulatorRequest, token: String) -> Result<DevicePush, SimulatorRejection> {
        guard let topic = request.header("apns-topic") else { return .failure(.badRequest(.missingTopic)) }
        guard HeaderRules.isWellFormedTopic(topic) else { return .failure(.badRequest(.badTopic)) }
        let pushType: APNSPushType
        if let value = request.header("apns-push-type") {
            guard let known = APNSPushType(headerValue: value) else {
                return .failure(.badRequest(.invalidPushType))
            }
            pushType = known
        } else {
            pushType = .alert
        }
        let bundleID: String
        switch apps.bundleID(forTopic: topic, pushType: pushType) {
        case .success(let app): bundleID = app
        case .failure(let rejection): return .failure(rejection)
        }
        var priority = pushType.defaultPriority
        if let value = request.header("apns-priority") {
            guard let parsed = APNSPriority(headerValue: value), pushType.allowedPriorities.contains(parsed) else {
                return .failure(.badRequest(.badPriority))
            }
            priority = parsed
        }
        if let apnsID = request.header("apns-id"), !HeaderRules.isUUID(apnsID) {
            return .failure(.badRequest(.badMessageId))
        }
        let collapseID = request.header("apns-collapse-id")
        if let collapseID, collapseID.utf8.count > HeaderRules.maxCollapseIDSize {
            return .failure(.badRequest(.badCollapseId))
        }
        var expiration: Int64?
        if let value = request.header("apns-expiration") {
            guard let seconds = HeaderRules.expiration(value) else {
                return .failure(.badRequest(.badExpirationDate))
            }
            expiration = seconds
        }
        if let rejection = HeaderRules.checkPayload(
            request.body,
            limit: pushType.maxPayloadSize,
            malformedReason: malformedPayloadReason
        ) {
            return .failure(rejection)
        }
        return .success(
            DevicePush(
                token: token.lowercased(),
                topic: topic,
                bundleID: bundleID,
                pushType: pushType,
                priority: priority,
                expiration: expiration,
                collapseID: collapseID
            )
        )
    }

    /// All steps, with `authenticate` standing for step 4: for table tests and documentation.
    func validate(
        _ request: SimulatorRequest,
        authenticate: (SimulatorRequest) -> SimulatorRejection? = { _ in nil }
    ) -> Result<DevicePush, SimulatorRejection> {
        guard case .device(let token) = SimulatorRoute(path: request.path) else { return .failure(.badPath) }
        if let rejection = checkRequest(request, token: token) { return .failure(rejection) }
        if let rejection = authenticate(request) { return .failure(rejection) }
        return checkNotification(request, token: token)
    }
}
