public import APNs
import Foundation
public import HeraldCore
import Synchronization

/// Creates and deletes the broadcast channels of activities, on APNs' channel-management host.
public protocol LiveActivityChannels: Sendable {
    func create(
        app: APNSAppConfiguration,
        environment: APNSEnvironment,
        storagePolicy: APNSChannelMessageStoragePolicy
    ) async throws -> APNSChannelID
    func delete(app: APNSAppConfiguration, environment: APNSEnvironment, channelID: APNSChannelID) async throws
}

/// ``LiveActivityChannels`` over one connection pool per (app, environment) to the management
/// host, opened on first use (channels are created and deleted rarely).
public final class ManagementChannels: LiveActivityChannels {
    private let endpoints: APNSEndpoints
    private let logger: Logger
    private let state = Mutex<[String: (APNSClient, APNSConnectionPool)]>([:])

    public init(endpoints: APNSEndpoints, logger: Logger = Logger(label: "herald.live-activities")) {
        self.endpoints = endpoints
        self.logger = logger
    }

    private func client(_ app: APNSAppConfiguration, _ environment: APNSEnvironment) -> APNSClient {
        let key = "\(app.bundleID)/\(environment.rawValue)"
        return state.withLock { clients in
            if let (client, _) = clients[key] { return client }
            let pool = APNSConnectionPool(
                endpoint: endpoints.management(environment),
                tls: APNSTLSConfiguration(caFile: endpoints.caFile, credentials: app.credentials),
                logger: logger
            )
            let client = APNSClient(transport: pool, credentials: app.credentials, logger: logger)
            clients[key] = (client, pool)
            return client
        }
    }

    public func create(
        app: APNSAppConfiguration,
        environment: APNSEnvironment,
        storagePolicy: APNSChannelMessageStoragePolicy
    ) async throws -> APNSChannelID {
        try await client(app, environment).createChannel(bundleID: app.bundleID, storagePolicy: storagePolicy)
    }

    public func delete(app: APNSAppConfiguration, environment: APNSEnvironment, channelID: APNSChannelID) async throws {
        try await client(app, environment).deleteChannel(bundleID: app.bundleID, channelID: channelID)
    }

    /// Closes the pools opened so far.
    public func shutdown() async {
        let pools = state.withLock { clients in
            defer { clients = [:] }
            return clients.values.map(\.1)
        }
        for pool in pools { await pool.shutdown() }
    }
}
