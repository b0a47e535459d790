public import CloudKit
import HeraldCore
import Synchronization

/// Wake schedules' CloudKit mode on the CloudKit client. The key is the one of the app whose
/// `cloudkit` entry in `HERALD_APPS_FILE` names the schedule's container, else the default key
/// (`CLOUDKIT_KEY_ID`); one client per key, opened on first use and kept.
public final class CloudKitWakePublisher: WakeRecordPublisher {
    private let settings: CloudKitSettings
    private let clients = Mutex<[String: CloudKitClient]>([:])

    /// `nil` when no CloudKit key is configured: CloudKit-mode schedules are then refused.
    public init?(settings: CloudKitSettings) {
        guard settings.defaultKey != nil || !settings.appKeys.isEmpty else { return nil }
        self.settings = settings
    }

    public func createRecord(
        container: String,
        environment: WakeCloudKitEnvironment,
        recordType: String,
        field: String,
        unixSeconds: Int64
    ) async throws -> String {
        let client = try client(for: container)
        do {
            return try await client.createRecord(
                container: container,
                environment: Self.environment(environment),
                recordType: recordType,
                fields: [field: .int64(unixSeconds)]
            ).recordName
        } catch {
            throw CloudKitWakeFailure(error)
        }
    }

    public func deleteOlderRecords(
        container: String,
        environment: WakeCloudKitEnvironment,
        recordType: String,
        field: String,
        keep: Int
    ) async throws -> Int {
        let client = try client(for: container)
        do {
            return try await client.cleanup(
                container: container,
                environment: Self.environment(environment),
                recordType: recordType,
                sortField: field,
                keep: keep
            )
        } catch {
            throw CloudKitWakeFailure(error)
        }
    }

    /// Closes the clients' connections.
    public func close() async {
        let open = clients.withLock { clients in
            defer { clients = [:] }
            return Array(clients.values)
        }
        for client in open { await client.close() }
    }

    private static func environment(_ environment: WakeCloudKitEnvironment) -> CloudKitEnvironment {
        switch environment {
        case .production: .production
        case .development: .development
        }
    }

    private func client(for container: String) throws -> CloudKitClient {
        let signer =
            settings.appKeys.values.first(where: { $0.container == container })?.signer ?? settings.defaultKey
        guard let signer else {
            throw CloudKitWakeFailure(
                CloudKitError(
                    .invalidConfiguration,
                    reason: "no CloudKit key serves container \(container): set CLOUDKIT_KEY_ID and "
                        + "CLOUDKIT_PRIVATE_KEY_FILE, or give an app in HERALD_APPS_FILE a cloudkit key for it"
                )
            )
        }
        return try clients.withLock { clients in
            if let client = clients[signer.keyID] { return client }
            do throws(CloudKitError) {
                let client = try CloudKitClient(signer: signer, configuration: settings.clientConfiguration)
                clients[signer.keyID] = client
                return client
            } catch {
                throw CloudKitWakeFailure(error)
            }
        }
    }
}

/// A ``CloudKitError`` as a wake run reads it: CloudKit's code, whether to retry, and when.
public struct CloudKitWakeFailure: WakeCloudKitFailure, CustomStringConvertible {
    public let error: CloudKitError

    public init(_ error: CloudKitError) {
        self.error = error
    }

    public var code: String { error.code.rawValue }
    public var isRetryable: Bool { error.isRetryable }
    public var retryAfter: Duration? { error.retryAfter }
    public var description: String { error.description }
}
