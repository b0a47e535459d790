/// One numbered schema change, with SQL for each dialect.
///
/// Versions are applied in ascending order, once each, and recorded in `schema_migrations`. Never
/// edit a migration that has shipped: add a new one. The SQL may hold several `;`-separated
/// statements; it runs inside the migration transaction, so avoid statements PostgreSQL refuses
/// in a transaction (`CREATE INDEX CONCURRENTLY`, `VACUUM`).
public struct Migration: Sendable, Hashable {
    /// Position in the sequence; unique and positive.
    public var version: Int
    /// A short snake_case description, recorded beside the version.
    public var name: String
    /// SQL for SQLite.
    public var sqlite: String
    /// SQL for PostgreSQL.
    public var postgres: String

    public init(version: Int, name: String, sqlite: String, postgres: String) {
        self.version = version
        self.name = name
        self.sqlite = sqlite
        self.postgres = postgres
    }

    /// A migration whose SQL is the same in both dialects.
    public init(version: Int, name: String, sql: String) {
        self.init(version: version, name: name, sqlite: sql, postgres: sql)
    }

    /// The SQL to run on `dialect`.
    public func sql(for dialect: SQLDialect) -> String {
        switch dialect {
        case .sqlite: sqlite
        case .postgres: postgres
        }
    }
}
