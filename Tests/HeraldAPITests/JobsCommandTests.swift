import DatabaseTestSupport
import Foundation
import HeraldAPI
import HeraldCore
import Jobs
import ProcessTestSupport
import Storage
import Testing

/// `herald jobs` against a SQLite file that a queue in this process filled.
@Suite("herald jobs")
struct JobsCommandTests {
    /// Runs `herald` to completion and returns its exit status, standard output and error.
    ///
    /// - Parameters:
    ///   - environment: replaces these variables of the test's environment (`nil` unsets one).
    ///   - directory: the working directory, if not the test's.
    static func herald(
        _ arguments: [String],
        environment: [String: String?] = [:],
        directory: URL? = nil
    ) async throws -> (status: Int32, output: String, error: String) {
        var merged: [String: String]?
        if !environment.isEmpty {
            var variables = ProcessInfo.processInfo.environment
            for (name, value) in environment { variables[name] = value }
            merged = variables
        }
        let result = try await ChildProcess.run(
            HeraldProcess.binary.path,
            arguments: arguments,
            environment: merged,
            workingDirectory: directory?.path
        )
        return (result.termination.status, result.standardOutput, result.standardError)
    }

    @Test func statsListInspectRetryAndCancel() async throws {
        let test = try await TestDatabase.make(.sqliteFile)
        let logger = Logger(label: "test", level: .error, handler: RecordingLogHandler())
        let db = try await test.open()
        var handlers = JobHandlers()
        handlers.register("wake.ping", options: JobKindOptions(maxAttempts: 1)) { _ in
            .retry(reason: "APNs answered 503 ServiceUnavailable")
        }
        let queue = JobQueue(database: db, handlers: handlers, metrics: MetricsRegistry())
        do {
            try await Migrator.migrate(db, HeraldSchema.migrations, logger: logger)
            let dead = try await queue.enqueue(NewJob(kind: "wake.ping", payload: #"{"token":"ab"}"#))
            let later = try await queue.enqueue(NewJob(kind: "reminder", dueAt: Date().addingTimeInterval(3_600)))
            try await JobWorker(queue: queue, owner: "test", logger: logger).runDueJobs()
            await db.close()
            let url = test.url
            let deadID = dead.job.id.uuidString.lowercased()
            let laterID = later.job.id.uuidString.lowercased()

            let stats = try await Self.herald(["jobs", "stats", "--database-url", url])
            #expect(stats.status == 0)
            #expect(stats.output.contains("pending    1"))
            #expect(stats.output.contains("dead       1"))
            #expect(stats.output.contains("oldest due job: none is due"))

            let list = try await Self.herald(["jobs", "list", "--status", "dead", "--database-url", url])
            #expect(list.status == 0)
            #expect(list.output.contains(deadID))
            #expect(list.output.contains("APNs answered 503"))
            #expect(!list.output.contains(laterID))

            let inspect = try await Self.herald(["jobs", "inspect", deadID, "--database-url", url])
            #expect(inspect.output.contains("status: dead"))
            #expect(inspect.output.contains(#"payload: {"token":"ab"}"#))

            let retry = try await Self.herald(["jobs", "retry", deadID, "--database-url", url])
            #expect(retry.status == 0)
            #expect(retry.output.contains("pending again"))
            let retryAgain = try await Self.herald(["jobs", "retry", deadID, "--database-url", url])
            #expect(retryAgain.status == 1)
            #expect(retryAgain.error.contains("it is pending"))

            let cancel = try await Self.herald(["jobs", "cancel", laterID, "--database-url", url])
            #expect(cancel.status == 0)
            let unknown = try await Self.herald(["jobs", "inspect", UUID().uuidString, "--database-url", url])
            #expect(unknown.status == 1)
            #expect(unknown.error.contains("no job has the id"))
            let badStatus = try await Self.herald(["jobs", "list", "--status", "zombie", "--database-url", url])
            #expect(badStatus.status == 2)
            #expect(badStatus.error.contains("use one of pending, running"))

            let after = try await Self.herald(["jobs", "stats", "--database-url", url])
            #expect(after.output.contains("cancelled  1"))
            #expect(after.output.contains("pending    1"))
        } catch {
            await db.close()
            await test.remove()
            throw error
        }
        await test.remove()
    }

    /// With `DATABASE_URL` unset in a folder without `herald.sqlite`, the read-only commands say
    /// which file is missing and what to set, and create nothing.
    @Test(arguments: [["stats"], ["list"], ["inspect", "0b7aac1e"]])
    func readOnlyCommandsRefuseToCreateADatabase(action: [String]) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-jobs-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let result = try await Self.herald(["jobs"] + action, environment: ["DATABASE_URL": nil], directory: directory)
        #expect(result.status == 2, "stderr:\n\(result.error)")
        let path = directory.appendingPathComponent("herald.sqlite").standardizedFileURL.path
        #expect(result.error.contains("no database at \(path)"), "stderr:\n\(result.error)")
        #expect(result.error.contains("set DATABASE_URL"))
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(result.output.isEmpty)
    }

    /// An existing database is named (absolute path) on standard error; a short id works as in git.
    @Test func namesTheDatabaseAndTakesUniqueIdPrefixes() async throws {
        let test = try await TestDatabase.make(.sqliteFile)
        let logger = Logger(label: "test", level: .error, handler: RecordingLogHandler())
        let db = try await test.open()
        let queue = JobQueue(database: db, handlers: JobHandlers(), metrics: MetricsRegistry())
        do {
            try await Migrator.migrate(db, HeraldSchema.migrations, logger: logger)
            // Two random ids, and a twin of the first that differs only in its last digit (copied
            // row), so that a 35-character prefix is ambiguous while 8 characters name one job.
            var ids: [String] = []
            for _ in 0..<2 {
                let job = try await queue.enqueue(NewJob(kind: "reminder", dueAt: Date().addingTimeInterval(3_600)))
                ids.append(job.job.id.uuidString.lowercased())
            }
            let twin = String(ids[0].dropLast()) + (ids[0].hasSuffix("0") ? "1" : "0")
            try await db.execute(
                """
                INSERT INTO jobs (id, kind, payload, status, due_at, attempts, max_attempts, missed_runs,
                    created_at, updated_at)
                SELECT $2, kind, payload, status, due_at, attempts, max_attempts, missed_runs, created_at,
                    updated_at
                FROM jobs WHERE id = $1
                """,
                [.text(ids[0]), .text(twin)]
            )
            await db.close()
            let url = test.url
            let pair = [ids[0], twin]
            let common = 35
            let unique = ids[1]
            // UUIDv7: ids made together share their time; 24 characters reach far into the random bits.
            let uniquePrefix = String(unique.prefix(24))

            let stats = try await Self.herald(["jobs", "stats"], environment: ["DATABASE_URL": url])
            #expect(stats.status == 0)
            guard case .sqlite(let path) = try DatabaseURL(parsing: url) else {
                Issue.record("the test database is SQLite")
                return
            }
            let absolute = URL(fileURLWithPath: path).standardizedFileURL.path
            #expect(stats.error.contains("database: sqlite:\(absolute)"), "stderr:\n\(stats.error)")

            let inspect = try await Self.herald(["jobs", "inspect", uniquePrefix, "--database-url", url])
            #expect(inspect.status == 0, "stderr:\n\(inspect.error)")
            #expect(inspect.output.contains("id: \(unique)"))

            let ambiguous = try await Self.herald([
                "jobs", "cancel", String(pair[0].prefix(common)), "--database-url", url,
            ])
            #expect(ambiguous.status == 2)
            #expect(ambiguous.error.contains("ambiguous"))
            #expect(ambiguous.error.contains(pair[0]) && ambiguous.error.contains(pair[1]))

            let short = try await Self.herald(["jobs", "retry", String(unique.prefix(3)), "--database-url", url])
            #expect(short.status == 2)
            #expect(short.error.contains("at least 4 characters"))

            let cancel = try await Self.herald(["jobs", "cancel", uniquePrefix, "--database-url", url])
            #expect(cancel.status == 0, "stderr:\n\(cancel.error)")
            #expect(cancel.output.contains("job \(unique) cancelled"))
        } catch {
            await db.close()
            await test.remove()
            throw error
        }
        await test.remove()
    }
}
