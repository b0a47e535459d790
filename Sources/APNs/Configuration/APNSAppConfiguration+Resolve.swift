public import HeraldCore

/// Why an app and environment named in a request could not be resolved against the configured apps.
public enum APNSAppResolutionError: Error, Sendable, Hashable {
    /// No app is configured at all.
    case noApps
    /// No configured app has the bundle ID; `known` lists those that do exist.
    case unknownApp(known: String)
    /// The app does not serve the environment; `suggestion` is the one it serves.
    case environmentNotServed(app: String, environment: APNSEnvironment, suggestion: String)

    /// What to tell the caller, with what to fix.
    public var message: String {
        switch self {
        case .noApps:
            "no APNs app is configured: set APNS_AUTH_KEY, APNS_KEY_ID, APPLE_TEAM_ID and TOPIC, "
                + "or HERALD_APPS_FILE, and restart"
        case .unknownApp(let known):
            "app is not a configured app: use one of \(known)"
        case .environmentNotServed(let app, let environment, let suggestion):
            "\(app) is not configured for \(environment): use \(suggestion)"
        }
    }
}

extension APNSAppConfiguration {
    /// The app and environment a request goes to, as every `/v1` route resolves them.
    ///
    /// - Parameters:
    ///   - apps: the configured apps; the first is the default.
    ///   - app: a bundle ID, or `nil` for the first configured app.
    ///   - environment: `nil` for the app's default (``defaultEnvironment``).
    public static func resolve(
        in apps: [APNSAppConfiguration],
        app: String?,
        environment: APNSEnvironment?
    ) throws(APNSAppResolutionError) -> (APNSAppConfiguration, APNSEnvironment) {
        guard !apps.isEmpty else { throw .noApps }
        let candidates = app.map { name in apps.filter { $0.bundleID == name } } ?? [apps[0]]
        guard let first = candidates.first else {
            throw .unknownApp(known: apps.map(\.bundleID).joined(separator: ", "))
        }
        if let environment {
            guard let match = candidates.first(where: { $0.serves(environment) }) else {
                throw .environmentNotServed(
                    app: first.bundleID,
                    environment: environment,
                    suggestion: first.environment?.rawValue ?? "production"
                )
            }
            return (match, environment)
        }
        return (first, first.defaultEnvironment)
    }
}

extension Refusal {
    /// The refusal for an app or environment that could not be resolved, as every API words it:
    /// unavailable when no app is configured, invalid for an unknown app or an environment the
    /// app does not serve.
    public init(_ error: APNSAppResolutionError) {
        switch error {
        case .noApps: self.init(.unavailable, code: "apns_not_configured", message: error.message)
        case .unknownApp: self = .invalid("unknown_app", error.message, field: "app")
        case .environmentNotServed: self = .invalid("invalid_environment", error.message, field: "environment")
        }
    }
}
