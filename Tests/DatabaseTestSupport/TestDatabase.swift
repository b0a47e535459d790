import Foundation
import HeraldCore
import Storage
import Synchronization
import Testing

/// The backends every conformance test runs against. None is optional: PostgreSQL fails loudly
/// when `HERALD_TEST_POSTGRES_URL` is missing.
enum Backend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqliteMemory = "sqlite-memory"
    case sqliteFile = "sqlite-file"
    case postgres

    var testDescription: String { rawValue }
}

struct TestSetupError: Error, CustomStringConvertible {
    let description: String
}

/// A logger whose records a test can inspect.
final class RecordingLogHandler: LogHandler {
    private let records = Mutex<[LogRecord]>([])

    func log(_ record: LogRecord) {
        records.withLock { $0.append(record) }
    }

    var all: [LogRecord] { records.withLock { $0 } }

    func messages(at level: LogLevel) -> [LogRecord] {
        all.filter { $0.level == level }
    }
}

func makeLogger(_ handler: RecordingLogHandler = RecordingLogHandler(), level: LogLevel = .debug) -> Logger {
    Logger(label: "herald.storage.test", level: level, handler: handler)
}

/// A fresh, empty database for one test: a memory database, a file in a new temporary directory,
/// or a new PostgreSQL database created on the server at `HERALD_TEST_POSTGRES_URL`.
struct TestDatabase: Sendable {
    let backend: Backend
    /// The URL to open it; for `sqlite::memory:` each open is a different database.
    let url: String
    private let cleanup: @Sendable () async -> Void

    static let postgresURLVariable = "HERALD_TEST_POSTGRES_URL"

    /// The shared test server's URL, or a failure saying how to get one.
    static func postgresAdminURL() throws -> String {
        guard let url = ProcessInfo.processInfo.environment[postgresURLVariable], !url.isEmpty else {
            throw TestSetupError(
                description: "\(postgresURLVariable) is not set: run `make test`, which starts a throwaway PostgreSQL"
            )
        }
        return url
    }

    static func make(_ backend: Backend, poolSize: Int = 2) async throws -> TestDatabase {
        switch backend {
        case .sqliteMemory:
            return TestDatabase(backend: backend, url: "sqlite::memory:", cleanup: {})
        case .sqliteFile:
            let directory = FileManager.default.temporaryDirectory
                .appendingPathComponent("herald-storage-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let path = directory.appendingPathComponent("test.sqlite").path
            return TestDatabase(backend: backend, url: "sqlite:\(path)") {
                try? FileManager.default.removeItem(at: directory)
            }
        case .postgres:
            let adminURL = try postgresAdminURL()
            let name = "herald_test_\(UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: ""))"
            let admin = try await DatabaseFactory.open(url: withParameter(adminURL, "pool_size=1"), logger: quiet)
            do {
                try await admin.execute("CREATE DATABASE \(name)", [])
            } catch {
                await admin.close()
                throw error
            }
            await admin.close()
            let url = withParameter(replacingDatabase(in: adminURL, with: name), "pool_size=\(poolSize)")
            return TestDatabase(backend: backend, url: url) {
                guard
                    let admin = try? await DatabaseFactory.open(
                        url: withParameter(adminURL, "pool_size=1"),
                        logger: quiet
                    )
                else { return }
                _ = try? await admin.execute("DROP DATABASE IF EXISTS \(name) WITH (FORCE)", [])
                await admin.close()
            }
        }
    }

    func open(logger: Logger = quiet) async throws -> any Database {
        try await DatabaseFactory.open(url: url, logger: logger)
    }

    func remove() async {
        await cleanup()
    }

    static let quiet = Logger(label: "herald.storage.test", level: .error, handler: RecordingLogHandler())

    /// `url` with `/name` as its database path, keeping user, host and parameters.
    static func replacingDatabase(in url: String, with name: String) -> String {
        guard let scheme = url.range(of: "://") else { return url }
        let rest = url[scheme.upperBound...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        let query = rest[authorityEnd...].firstIndex(of: "?").map { String(rest[$0...]) } ?? ""
        return String(url[..<authorityEnd]) + "/" + name + query
    }

    static func withParameter(_ url: String, _ parameter: String) -> String {
        url + (url.contains("?") ? "&" : "?") + parameter
    }
}

/// Runs `body` with a fresh database of `backend`, then closes and removes it.
func withDatabase(
    _ backend: Backend,
    poolSize: Int = 2,
    logger: Logger = TestDatabase.quiet,
    _ body: (any Database, TestDatabase) async throws -> Void
) async throws {
    let test = try await TestDatabase.make(backend, poolSize: poolSize)
    let db: any Database
    do {
        db = try await test.open(logger: logger)
    } catch {
        await test.remove()
        throw error
    }
    do {
        try await body(db, test)
    } catch {
        await db.close()
        await test.remove()
        throw error
    }
    await db.close()
    await test.remove()
}

/// Runs `body` and returns the ``DatabaseError`` it threw; records an issue when it threw nothing
/// or something else.
func expectDatabaseError(
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> Void
) async -> DatabaseError? {
    do {
        try await body()
        Issue.record("expected a DatabaseError, but the call succeeded", sourceLocation: sourceLocation)
        return nil
    } catch let error as DatabaseError {
        return error
    } catch {
        Issue.record("expected a DatabaseError, got \(type(of: error)): \(error)", sourceLocation: sourceLocation)
        return nil
    }
}
