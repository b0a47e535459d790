public import APNs
public import Devices
public import LiveActivities

/// The device registry answering Live Activities' question: which users an audience of tags or
/// everyone names (``LiveActivityUserDirectory``).
public struct DeviceRegistryUsers: LiveActivityUserDirectory {
    public let devices: DeviceStore

    public init(devices: DeviceStore) {
        self.devices = devices
    }

    public func users(
        app: String,
        environment: APNSEnvironment,
        matching selector: LiveActivityUserSelector
    ) async throws -> [String] {
        let audience: AudienceSelector
        switch selector {
        case .anyTag(let tags): audience = .anyTag(tags)
        case .allTags(let tags): audience = .allTags(tags)
        case .all: audience = .all
        }
        return try await devices.users(app: app, environment: environment, selector: audience)
    }
}
