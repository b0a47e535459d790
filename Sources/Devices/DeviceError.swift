public import APNs
public import HeraldCore

/// The device API's refusals (``DeviceError``).
public enum DeviceDomain: RefusalDomain {}

/// Why a device request was refused: invalid, too large, not found (no device has the token), or
/// unavailable (no APNs app is configured). Messages never quote device tokens.
public typealias DeviceError = Refusal<DeviceDomain>

extension Refusal where Domain == DeviceDomain {
    /// No device with this token in the app and environment.
    public static func notFound(app: String, environment: APNSEnvironment) -> DeviceError {
        DeviceError(
            .notFound,
            code: "not_found",
            message: "no device with this token is registered for \(app) (\(environment.rawValue)): "
                + "register it first (PUT on this device's path), or check app and environment",
            field: "token"
        )
    }

    /// A client token set a tag that `HERALD_CLIENT_TAGS` does not allow (403): tags mark the
    /// segments a backend pushes to, so only the backend (with the API key) sets the others.
    public static func tagNotAllowed(_ tag: String, field: String) -> DeviceError {
        DeviceError(
            .forbidden,
            code: "tag_not_allowed",
            message: "\(field) \"\(tag)\" is not a tag a client may set (HERALD_CLIENT_TAGS lists those): "
                + "leave it out, or have the app's backend set it with the API key",
            field: field
        )
    }
}
