/// One numbered schema change of one module, with SQL for each dialect.
///
/// A migration is identified by its module and its number in that module (``ID``, `Devices 2`):
/// each module numbers its own from 1, and a new module's migrations cannot collide with
/// another's. Each is applied once and recorded in `herald_migrations`. Never edit a migration
/// that has shipped: add a new one. The SQL may hold several `;`-separated statements; it runs
/// inside the migration transaction, so avoid statements PostgreSQL refuses in a transaction
/// (`CREATE INDEX CONCURRENTLY`, `VACUUM`).
///
/// The migrations that shipped before modules numbered their own carry the version of the one
/// sequence they were released with (``releasedAs``): ``Migrator`` reads a database those releases
/// recorded in `schema_migrations` through it, and applies them in that order.
///
/// ```swift
/// Migration(module: "Widgets", number: 1, name: "create_widgets", sql: "CREATE TABLE widgets (id TEXT)")
/// ```
public struct Migration: Sendable, Hashable {
    /// A migration's identity: its module and its number in it.
    public struct ID: Sendable, Hashable, CustomStringConvertible {
        /// The module that owns the tables (`Devices`).
        public var module: String
        /// Position in the module's own sequence, from 1.
        public var number: Int

        public init(module: String, number: Int) {
            self.module = module
            self.number = number
        }

        /// `Devices 2`.
        public var description: String { "\(module) \(number)" }
    }

    /// The module that owns the tables this migration changes (`Devices`).
    public var module: String
    /// Position in the module's own sequence: unique in the module, from 1, never reused.
    public var number: Int
    /// A short snake_case description, recorded beside the number.
    public var name: String
    /// The version of the one global sequence this migration shipped with before modules
    /// numbered their own (`7` for `Devices 1`); `nil` for every migration written since.
    public var releasedAs: Int?
    /// SQL for SQLite.
    public var sqlite: String
    /// SQL for PostgreSQL.
    public var postgres: String

    public init(module: String, number: Int, name: String, releasedAs: Int? = nil, sqlite: String, postgres: String) {
        self.module = module
        self.number = number
        self.name = name
        self.releasedAs = releasedAs
        self.sqlite = sqlite
        self.postgres = postgres
    }

    /// A migration whose SQL is the same in both dialects.
    public init(module: String, number: Int, name: String, releasedAs: Int? = nil, sql: String) {
        self.init(module: module, number: number, name: name, releasedAs: releasedAs, sqlite: sql, postgres: sql)
    }

    /// `Devices 2`.
    public var id: ID { ID(module: module, number: number) }

    /// The SQL to run on `dialect`.
    public func sql(for dialect: SQLDialect) -> String {
        switch dialect {
        case .sqlite: sqlite
        case .postgres: postgres
        }
    }
}
