public import APNs

extension APNSClientProvider {
    /// The app and environment a notification goes to.
    ///
    /// - Parameters:
    ///   - app: a bundle ID, or `nil` for the first configured app.
    ///   - environment: `nil` for the app's default (``APNs/APNSAppConfiguration/defaultEnvironment``).
    /// - Throws: ``NotificationError``: unavailable when no app is configured, invalid for an unknown app or
    ///   an environment the app does not serve.
    public func resolve(
        app: String?,
        environment: APNSEnvironment?
    ) throws(NotificationError) -> (APNSAppConfiguration, APNSEnvironment) {
        guard !apps.isEmpty else {
            throw NotificationError(
                .unavailable,
                code: "apns_not_configured",
                message: "no APNs app is configured: set APNS_AUTH_KEY, APNS_KEY_ID, APPLE_TEAM_ID and TOPIC, "
                    + "or HERALD_APPS_FILE, and restart"
            )
        }
        let candidates = app.map { name in apps.filter { $0.bundleID == name } } ?? [apps[0]]
        guard let first = candidates.first else {
            let known = apps.map(\.bundleID).joined(separator: ", ")
            throw .invalid("unknown_app", "app is not a configured app: use one of \(known)", field: "app")
        }
        if let environment {
            guard let match = candidates.first(where: { $0.serves(environment) }) else {
                throw .invalid(
                    "invalid_environment",
                    "\(first.bundleID) is not configured for \(environment): use \(first.environment?.rawValue ?? "production")",
                    field: "environment"
                )
            }
            return (match, environment)
        }
        return (first, first.defaultEnvironment)
    }
}
