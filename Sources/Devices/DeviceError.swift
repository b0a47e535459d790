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
                + "register it with PUT /v1/devices/{token}, or check app and environment",
            field: "token"
        )
    }
}
