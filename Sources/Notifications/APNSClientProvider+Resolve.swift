public import APNs
public import APNsTransport

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
        do {
            return try APNSAppConfiguration.resolve(in: apps, app: app, environment: environment)
        } catch {
            throw NotificationError(error)
        }
    }
}

extension NotificationError {
    /// The refusal for an app or environment that could not be resolved.
    public init(_ error: APNSAppResolutionError) {
        switch error {
        case .noApps: self.init(.unavailable, code: "apns_not_configured", message: error.message)
        case .unknownApp: self = .invalid("unknown_app", error.message, field: "app")
        case .environmentNotServed: self = .invalid("invalid_environment", error.message, field: "environment")
        }
    }
}
