import Foundation
public import HeraldCore
public import Storage
import Synchronization
public import Testing

// Shared by every test target that needs a fresh database on each backend (Storage, Jobs,
// Notifications): one definition of the backends and of how a throwaway database is made.

/// The backends every conformance test runs against. None is optional: PostgreSQL fails loudly
/// when `HERALD_TEST_POSTGRES_URL` is missing.
public enum Backend: String, CaseIterable, Sendable, CustomStringConvertible {
    case sqliteMemory = "sqlite-memory"
    case sqliteFile = "sqlite-file"
    case postgres

    public var description: String { rawValue }
}

/// Parameterized tests name their backend by its raw value.
extension Backend: CustomTestStringConvertible {
    public var testDescription: String { rawValue }
}

public struct TestSetupError: Error, CustomStringConvertible {
    public let description: String

    public init(description: String) {
        self.description = description
    }
}

/// A logger whose records a test can inspect.
public final class RecordingLogHandler: LogHandler {
    private let records = Mutex<[LogRecord]>([])

    public init() {}

    public func log(_ record: LogRecord) {
        records.withLock { $0.append(record) }
    }

    public var all: [LogRecord] { records.withLock { $0 } }

    public func messages(at level: LogLevel) -> [LogRecord] {
        all.filter { $0.level == level }
    }
}

public func makeLogger(_ handler: RecordingLogHandler = RecordingLogHandler(), level: LogLevel = .debug) -> Logger {
    Logger(label: "herald.storage.test", level: level, handler: handler)
}

/// A fresh, empty database for one test: a memory database, a file in a new temporary directory,
/// or a new PostgreSQL database created on the server at `HERALD_TEST_POSTGRES_URL`.
public struct TestDatabase: Sendable {
    public let backend: Backend
    /// The URL to open it; for `sqlite::memory:` each open is a different database.
    public let url: String
    private let cleanup: @Sendable () async -> Void

    public static let postgresURLVariable = "HERALD_TEST_POSTGRES_URL"

    /// The shared test server's URL, or a failure saying how to get one.
    public static func postgresAdminURL() throws -> String {
        guard let url = ProcessInfo.processInfo.environment[postgresURLVariable], !url.isEmpty else {
            throw TestSetupError(
                description: "\(postgresURLVariable) is not set: run `make test`, which starts a throwaway PostgreSQL"
            )
        }
        return url
    }

    public static func make(_ backend: Backend, poolSize: Int = 2) async throws -> TestDatabase {
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

    public func open(logger: Logger = quiet) async throws -> any Database {
        try await DatabaseFactory.open(url: url, logger: logger)
    }

    public func remove() async {
        await cleanup()
    }

    public static let quiet = Logger(label: "herald.storage.test", level: .error, handler: RecordingLogHandler())

    /// `url` with `/name` as its database path, keeping user, host and parameters.
    public static func replacingDatabase(in url: String, with name: String) -> String {
        guard let scheme = url.range(of: "://") else { return url }
        let rest = url[scheme.upperBound...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        let query = rest[authorityEnd...].firstIndex(of: "?").map { String(rest[$0...]) } ?? ""
        return String(url[..<authorityEnd]) + "/" + name + query
    }

    public static func withParameter(_ url: String, _ parameter: String) -> String {
        url + (url.contains("?") ? "&" : "?") + parameter
    }
}

/// Runs `body` with a fresh database of `backend`, then closes and removes it.
public func withDatabase(
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
