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
