public import APNs
public import APNsTransport

/// Creates and deletes the broadcast channels of activities, on APNs' channel-management host.
///
/// Herald's one implementation is ``Notifications/APNSClientProvider``'s management clients (one
/// pool per app and environment, shared with `/v1/channels`); tests may pass a fake.
public protocol LiveActivityChannels: Sendable {
    func create(
        app: APNSAppConfiguration,
        environment: APNSEnvironment,
        storagePolicy: APNSChannelMessageStoragePolicy
    ) async throws -> APNSChannelID
    func delete(app: APNSAppConfiguration, environment: APNSEnvironment, channelID: APNSChannelID) async throws
}

/// Channels through the provider's management client of the app and environment: the same pool
/// the `/v1/channels` routes use, opened on first use and closed by the provider's shutdown.
extension APNSClientProvider: LiveActivityChannels {
    public func create(
        app: APNSAppConfiguration,
        environment: APNSEnvironment,
        storagePolicy: APNSChannelMessageStoragePolicy
    ) async throws -> APNSChannelID {
        try await managementClient(for: app, environment: environment)
            .createChannel(bundleID: app.bundleID, storagePolicy: storagePolicy)
    }

    public func delete(app: APNSAppConfiguration, environment: APNSEnvironment, channelID: APNSChannelID) async throws {
        try await managementClient(for: app, environment: environment)
            .deleteChannel(bundleID: app.bundleID, channelID: channelID)
    }
}
