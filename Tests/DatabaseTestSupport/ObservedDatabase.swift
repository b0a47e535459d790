public import Storage

/// A database that shows the test every statement run inside a transaction before it runs, with
/// its binds and the transaction's executor: to count the transactions of one kind, hold one
/// open, run a statement of the test's own in it or read a statement's plan. With
/// `includingSingle`, statements run on their own are shown too (with `base` as the executor).
/// Everything else goes to `base` unchanged.
public struct ObservedDatabase: Database {
    let base: any Database
    let includingSingle: Bool
    /// Called with each statement's SQL, its binds and the transaction it runs in, before the
    /// statement.
    let observe: @Sendable (String, [SQLValue], any DatabaseExecutor) async throws -> Void

    public init(
        base: any Database,
        includingSingle: Bool = false,
        observe: @escaping @Sendable (String, [SQLValue], any DatabaseExecutor) async throws -> Void
    ) {
        self.base = base
        self.includingSingle = includingSingle
        self.observe = observe
    }

    public var dialect: SQLDialect { base.dialect }

    public func query(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow] {
        if includingSingle { try await observe(sql, binds, base) }
        return try await base.query(sql, binds)
    }

    public func execute(_ sql: String, _ binds: [SQLValue]) async throws -> Int {
        if includingSingle { try await observe(sql, binds, base) }
        return try await base.execute(sql, binds)
    }

    public func executeScript(_ sql: String) async throws {
        try await base.executeScript(sql)
    }

    public func transaction<T: Sendable>(_ body: @Sendable (any DatabaseExecutor) async throws -> T) async throws -> T {
        let observe = self.observe
        return try await base.transaction { tx in
            try await body(ObservedExecutor(base: tx, observe: observe))
        }
    }

    public func subscribe(
        channel: String,
        _ onNotification: @escaping @Sendable (String?) -> Void
    ) async throws -> DatabaseSubscription {
        try await base.subscribe(channel: channel, onNotification)
    }

    public func ping() async throws {
        try await base.ping()
    }

    public func close() async {
        await base.close()
    }
}

/// A transaction's executor that shows each statement to the test first.
private struct ObservedExecutor: DatabaseExecutor {
    let base: any DatabaseExecutor
    let observe: @Sendable (String, [SQLValue], any DatabaseExecutor) async throws -> Void

    var dialect: SQLDialect { base.dialect }

    func query(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow] {
        try await observe(sql, binds, base)
        return try await base.query(sql, binds)
    }

    func execute(_ sql: String, _ binds: [SQLValue]) async throws -> Int {
        try await observe(sql, binds, base)
        return try await base.execute(sql, binds)
    }

    func executeScript(_ sql: String) async throws {
        try await observe(sql, [], base)
        try await base.executeScript(sql)
    }
}
