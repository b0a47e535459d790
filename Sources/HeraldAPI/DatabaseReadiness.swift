public import Storage

/// `/readyz`'s database check: one round trip to the configured database.
public struct DatabaseReadiness: ReadinessCheck {
    public let name = "database"
    public let database: any Database

    public init(database: any Database) {
        self.database = database
    }

    public func check() async throws {
        try await database.ping()
    }
}
