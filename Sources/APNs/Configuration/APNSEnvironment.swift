/// Apple's two APNs environments. A device token belongs to one: tokens from development builds
/// work only with ``sandbox``.
public enum APNSEnvironment: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case production
    case sandbox

    /// Parses `production` or `sandbox` (also `development`, Apple's other name for the sandbox),
    /// ignoring case.
    public init?(name: String) {
        switch name.lowercased() {
        case "production": self = .production
        case "sandbox", "development": self = .sandbox
        default: return nil
        }
    }

    /// Where device pushes and broadcast sends go: `api.push.apple.com:443` or
    /// `api.sandbox.push.apple.com:443`.
    public var defaultEndpoint: APNSEndpoint {
        switch self {
        case .production: APNSEndpoint(host: "api.push.apple.com", port: 443)
        case .sandbox: APNSEndpoint(host: "api.sandbox.push.apple.com", port: 443)
        }
    }

    /// Where broadcast channels are managed: `api-manage-broadcast.push.apple.com:2196` or
    /// `api-manage-broadcast.sandbox.push.apple.com:2195`.
    public var defaultManagementEndpoint: APNSEndpoint {
        switch self {
        case .production: APNSEndpoint(host: "api-manage-broadcast.push.apple.com", port: 2196)
        case .sandbox: APNSEndpoint(host: "api-manage-broadcast.sandbox.push.apple.com", port: 2195)
        }
    }

    public var description: String { rawValue }
}
