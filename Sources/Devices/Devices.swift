import HeraldCore
public import HeraldFeature

/// The device registry as a feature: `/v1/devices` behind an API key (``DeviceRoutes``),
/// `/v1/client/devices` behind a client token (``ClientDeviceRoutes``, `HERALD_CLIENT_TAGS`), the
/// `devices` table, the hourly `devices.prune` job and how long a dead device is kept.
///
/// Its routes are built from the ``DeviceService`` `herald serve` provides (the registry is
/// shared with notifications, Live Activities and wake pings, which read audiences from it).
public enum Devices {
    public static let feature = HeraldFeature(
        name: "Devices",
        settings: [.invalidDeviceRetentionDays, .clientTags],
        migrations: DeviceMigrations.all,
        jobKinds: [DeviceRetention.jobKind],
        webhookEventTypes: ["device.invalidated", "device.reassigned"],
        retention: [
            "A device APNs called dead: HERALD_INVALID_DEVICE_RETENTION_DAYS after Herald learned it, then deleted."
        ]
    ) { context in
        let service = try context.service(DeviceService.self)
        let tags = try ClientDeviceSettings.load(environment: context.environment).tags
        return DeviceRoutes(service: service).routes + ClientDeviceRoutes(service: service, tags: tags).routes
    }
}
