import DatabaseTestSupport
import Foundation
import HeraldCore
import Storage
import Testing

@Suite("DATABASE_URL parsing and secrets")
struct DatabaseURLTests {
    @Test("SQLite URLs")
    func sqlite() throws {
        #expect(try DatabaseURL(parsing: "sqlite:herald.sqlite") == .sqlite(path: "herald.sqlite"))
        #expect(try DatabaseURL(parsing: "sqlite::memory:") == .sqlite(path: ":memory:"))
        #expect(
            try DatabaseURL(parsing: "sqlite:///var/lib/herald/db.sqlite") == .sqlite(path: "/var/lib/herald/db.sqlite")
        )
        #expect(try DatabaseURL(parsing: " sqlite:/tmp/x.sqlite\n") == .sqlite(path: "/tmp/x.sqlite"))
        #expect(throws: DatabaseError.self) { try DatabaseURL(parsing: "sqlite:") }
    }

    @Test("PostgreSQL URLs keep libpq parameters and take pool_size out")
    func postgres() throws {
        let parsed = try DatabaseURL(parsing: "postgres://herald:pw@db:5432/herald?sslmode=disable&pool_size=8")
        guard case .postgres(let url) = parsed else {
            Issue.record("expected a PostgreSQL URL")
            return
        }
        #expect(url.poolSize == 8)
        #expect(url.libpqURL == "postgres://herald:pw@db:5432/herald?sslmode=disable")
        #expect(url.redacted == "postgres://herald:***@db:5432/herald?sslmode=disable")

        guard case .postgres(let plain) = try DatabaseURL(parsing: "postgresql://db/herald") else {
            Issue.record("expected a PostgreSQL URL")
            return
        }
        #expect(plain.poolSize == DatabaseURL.defaultPoolSize)
        #expect(plain.libpqURL == "postgresql://db/herald")

        let badPool = #expect(throws: DatabaseError.self) {
            try DatabaseURL(parsing: "postgres://u:topsecret@db/x?pool_size=zero")
        }
        #expect(badPool?.code == .invalidURL)
        #expect(badPool?.description.contains("topsecret") == false)
    }

    @Test("passwords are redacted wherever they appear")
    func redaction() {
        #expect(DatabaseFactory.redact(url: "postgres://u:p%40ss@h/db") == "postgres://u:***@h/db")
        #expect(DatabaseFactory.redact(url: "postgres://u:pa@ss@h:1/db") == "postgres://u:***@h:1/db")
        #expect(
            DatabaseFactory.redact(url: "postgres://u@h/db?password=x&sslmode=require")
                == "postgres://u@h/db?password=***&sslmode=require"
        )
        #expect(DatabaseFactory.redact(url: "postgres://h/db") == "postgres://h/db")
        #expect(DatabaseFactory.redact(url: "sqlite:herald.sqlite") == "sqlite:herald.sqlite")
    }

    @Test("an unknown scheme is refused without echoing the password")
    func unknownScheme() async {
        let error = await expectDatabaseError {
            _ = try await DatabaseFactory.open(url: "mysql://root:hunter22@db/herald", logger: TestDatabase.quiet)
        }
        #expect(error?.code == .invalidURL)
        #expect(error?.description.contains("hunter22") == false)
    }

    @Test("a PostgreSQL connection failure says where, never with the password")
    func connectionFailureIsRedacted() async {
        let log = RecordingLogHandler()
        let error = await expectDatabaseError {
            _ = try await DatabaseFactory.open(
                url: "postgres://herald:sup3rs3cret@127.0.0.1:1/herald?connect_timeout=2",
                logger: makeLogger(log)
            )
        }
        #expect(error?.code == .connectionFailed)
        #expect(error?.isConnectionError == true)
        let text = error.map { "\($0)" } ?? ""
        #expect(text.contains("127.0.0.1"))
        #expect(text.contains("herald:***@"))
        #expect(!text.contains("sup3rs3cret"))
        #expect(!log.all.contains { "\($0.message) \($0.metadata)".contains("sup3rs3cret") })
    }

    @Test("an SQLite file in a missing directory fails with a hint")
    func sqliteMissingDirectory() async {
        let error = await expectDatabaseError {
            _ = try await DatabaseFactory.open(
                url: "sqlite:/nonexistent-dir-\(UUID())/x.sqlite",
                logger: TestDatabase.quiet
            )
        }
        #expect(error?.code == .connectionFailed)
        #expect(error?.message.contains("directory exists") == true)
    }

    @Test("SQLValue literals and conveniences")
    func values() {
        let values: [SQLValue] = [nil, 1, 1.5, "x", true]
        #expect(values == [.null, .integer(1), .real(1.5), .text("x"), .integer(1)])
        #expect(SQLValue(Date(timeIntervalSince1970: 1.5)) == .integer(1500))
        #expect(
            SQLValue(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!)
                == .text("e621e1f8-c36c-495a-93fc-0c247a3e6e5f")
        )
        #expect(SQLValue(nil as String?) == .null)
        #expect(SQLValue.bool(false) == .integer(0))
        #expect(SQLValue.text("secret token").description == "text(12 bytes)")
    }
}
