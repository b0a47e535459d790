import Foundation
import HeraldAPI
import HeraldCore
import Jobs
import ProcessSpawn
import Storage
import Synchronization

/// `herald jobs bench`: the job queue benchmark. It fills the queue with jobs due far in the
/// future (the "millions pending" load), then measures (1) how fast the workers drain a backlog of
/// jobs that are all due (claim + complete throughput) and (2) due-to-start latency while jobs
/// fall due at a steady rate, fed one second ahead as a live system would add them.
///
/// Workers are separate `herald jobs work` processes (`--instances`, PostgreSQL) or run in this
/// process (`--instances 0`, the only choice for SQLite, which serves one instance).
enum JobsBenchCommand {
    static let spec = CommandSpec(
        name: "herald jobs bench",
        summary: "Measure the job queue: backlog throughput and due-to-start latency at a steady rate.",
        usage: "herald jobs bench --database-url URL [--count N] [--backlog N] [--rate R] [--duration S] "
            + "[--instances I] [--concurrency C]",
        options: [
            .init("database-url", value: "URL", help: "sqlite:PATH or postgres://… (default: DATABASE_URL)."),
            .init("count", value: "N", help: "Jobs scheduled in total, most due in 30 days (default 1000000)."),
            .init("backlog", value: "N", help: "Jobs due at once, drained as fast as possible (default 100000)."),
            .init("rate", value: "R", help: "Jobs falling due per second in the steady phase (default 2000)."),
            .init("duration", value: "S", help: "Seconds of the steady phase (default 30)."),
            .init(
                "instances",
                value: "I",
                help: "Worker processes; 0 runs one worker in this process (default 2, 0 for SQLite)."
            ),
            .init("concurrency", value: "C", help: "Jobs each worker runs at once (default 64)."),
        ]
    )

    static let workSpec = CommandSpec(
        name: "herald jobs work",
        summary: "Run a job worker with the benchmark's no-op handlers until SIGTERM (used by herald jobs bench).",
        usage: "herald jobs work --database-url URL [--concurrency C]",
        options: [
            .init("database-url", value: "URL", help: "sqlite:PATH or postgres://…"),
            .init("concurrency", value: "C", help: "Jobs run at once (default 64)."),
        ]
    )

    static let kinds = (filler: "bench.filler", backlog: "bench.backlog", paced: "bench.paced")

    static var handlers: JobHandlers {
        var handlers = JobHandlers()
        for kind in [kinds.filler, kinds.backlog, kinds.paced] { handlers.register(kind) { _ in .done } }
        return handlers
    }

    static func workerConfiguration(concurrency: Int) -> JobWorkerConfiguration {
        JobWorkerConfiguration(concurrency: concurrency, batchSize: max(1, min(200, concurrency)), lease: 30)
    }

    // MARK: herald jobs work

    static func work(_ arguments: [String]) async -> Int32 {
        let parsed: ParsedArguments
        let concurrency: Int
        do throws(UsageError) {
            parsed = try workSpec.parse(arguments)
            concurrency = try parsed.integer("concurrency", default: 64, range: 1...10_000)
        } catch {
            printError("herald jobs work: \(error.message)")
            return 2
        }
        if parsed.wantsHelp {
            print(workSpec.help, terminator: "")
            return 0
        }
        let logger = Logger(label: "herald.jobs", level: .warning)
        guard let url = parsed.value("database-url") ?? Setting.databaseURL.processValue else {
            printError("herald jobs work: --database-url URL is required")
            return 2
        }
        do {
            let database = try await DatabaseFactory.open(url: url, logger: logger)
            let queue = JobQueue(database: database, handlers: handlers)
            let worker = JobWorker(
                queue: queue,
                configuration: workerConfiguration(concurrency: concurrency),
                owner: ProcessIdentity.jobOwner(),
                logger: logger
            )
            try await ServiceGroup(services: [worker], logger: logger).run()
            await database.close()
            return 0
        } catch {
            printError("herald jobs work: \(error)")
            return 1
        }
    }

    // MARK: herald jobs bench

    struct Settings {
        var url: String
        var count: Int
        var backlog: Int
        var rate: Int
        var duration: Int
        var instances: Int
        var concurrency: Int
    }

    static func run(_ arguments: [String]) async -> Int32 {
        let settings: Settings
        do throws(UsageError) {
            let parsed = try spec.parse(arguments)
            if parsed.wantsHelp {
                print(spec.help, terminator: "")
                return 0
            }
            guard let url = parsed.value("database-url") ?? Setting.databaseURL.processValue else {
                throw UsageError("--database-url URL is required")
            }
            let sqlite = url.hasPrefix("sqlite:")
            settings = Settings(
                url: url,
                count: try parsed.integer("count", default: 1_000_000, range: 1...20_000_000),
                backlog: try parsed.integer("backlog", default: 100_000, range: 0...5_000_000),
                rate: try parsed.integer("rate", default: 2_000, range: 1...100_000),
                duration: try parsed.integer("duration", default: 30, range: 1...3_600),
                instances: try parsed.integer("instances", default: sqlite ? 0 : 2, range: 0...16),
                concurrency: try parsed.integer("concurrency", default: 64, range: 1...10_000)
            )
            if sqlite, settings.instances > 0 {
                throw UsageError("SQLite serves one instance: use --instances 0 (the worker runs in this process)")
            }
            if settings.backlog + settings.rate * settings.duration > settings.count {
                throw UsageError("--count must be at least --backlog + --rate × --duration")
            }
        } catch {
            printError("herald jobs bench: \(error.message)")
            return 2
        }
        do {
            try await bench(settings)
            return 0
        } catch {
            printError("herald jobs bench: \(error)")
            return 1
        }
    }

    static func bench(_ settings: Settings) async throws {
        let logger = Logger(label: "herald.jobs.bench", level: .warning)
        let database = try await DatabaseFactory.open(url: settings.url, logger: logger)
        try await Migrator.migrate(database, HeraldSchema.migrations, logger: logger)
        try await database.execute("DELETE FROM jobs WHERE kind LIKE 'bench.%'")
        let queue = JobQueue(database: database, handlers: handlers)
        let backend = database.dialect.rawValue

        // The pending load: jobs due in 30 days that the claims must step over via the index.
        let paced = settings.rate * settings.duration
        let filler = settings.count - settings.backlog - paced
        let fillStart = ContinuousClock.now
        let farFuture = Date().addingTimeInterval(30 * 86_400)
        try await insert(queue, count: filler, kind: kinds.filler) { _ in farFuture }
        let fillSeconds = seconds(since: fillStart)
        print(
            "jobs-bench: backend=\(backend) scheduled \(filler) future jobs in \(BenchCommand.format(fillSeconds, 1)) s "
                + "(\(Int(Double(filler) / max(fillSeconds, 0.001)))/s)"
        )

        // Backlog: all due now, then the workers start.
        let now = Date()
        try await insert(queue, count: settings.backlog, kind: kinds.backlog) { _ in now }
        let workers = try Workers(settings: settings, queue: queue, logger: logger)
        let backlogStart = ContinuousClock.now
        try await waitUntilDone(database, kind: kinds.backlog, lastDue: now)
        let backlogSeconds = seconds(since: backlogStart)
        let backlogRate = Double(settings.backlog) / max(backlogSeconds, 0.001)
        print(
            "jobs-bench: backlog \(settings.backlog) jobs drained in \(BenchCommand.format(backlogSeconds, 2)) s "
                + "= \(Int(backlogRate)) jobs/s (claim + complete, \(settings.instances) instance(s))"
        )

        // Steady phase: a producer adds each second's jobs one second before they fall due.
        let steadyStart = Date().addingTimeInterval(1)
        for second in 0..<settings.duration {
            let secondStart = steadyStart.addingTimeInterval(Double(second))
            let wait = secondStart.addingTimeInterval(-1).timeIntervalSinceNow
            if wait > 0 { try await Task.sleep(for: .milliseconds(Int64(wait * 1000))) }
            try await insert(queue, count: settings.rate, kind: kinds.paced) { index in
                secondStart.addingTimeInterval(Double(index) / Double(settings.rate))
            }
        }
        try await waitUntilDone(
            database,
            kind: kinds.paced,
            lastDue: steadyStart.addingTimeInterval(Double(settings.duration))
        )
        let lags = try await database.query(
            "SELECT started_at - due_at AS lag, finished_at FROM jobs WHERE kind = $1 AND status = 'done'",
            [.text(kinds.paced)]
        )
        var milliseconds = try lags.map { Double(try $0.int("lag")) }.sorted()
        if milliseconds.isEmpty { milliseconds = [0] }
        let lastFinish = try lags.map { try $0.int("finished_at") }.max() ?? 0
        let steadySeconds = max(0.001, Double(lastFinish) / 1000 - steadyStart.timeIntervalSince1970)
        let percentile = { (p: Double) in milliseconds[min(milliseconds.count - 1, Int(Double(milliseconds.count) * p))]
        }
        await workers.stop()
        let leftover = try await database.execute("DELETE FROM jobs WHERE kind LIKE 'bench.%'")
        await database.close()
        print(
            "jobs-bench: backend=\(backend) instances=\(settings.instances) scheduled=\(settings.count) "
                + "backlog_rate=\(Int(backlogRate))/s steady_rate=\(Int(Double(paced) / steadySeconds))/s "
                + "target_rate=\(settings.rate)/s due_to_start_p50_ms=\(Int(percentile(0.5))) "
                + "p99_ms=\(Int(percentile(0.99))) max_ms=\(Int(milliseconds.last ?? 0)) cleaned=\(leftover)"
        )
    }

    /// Inserts `count` jobs of `kind` in transactions of 4,000, due at `dueAt(index)`.
    static func insert(_ queue: JobQueue, count: Int, kind: String, dueAt: (Int) -> Date) async throws {
        var index = 0
        while index < count {
            let jobs = (index..<min(index + 4_000, count)).map { NewJob(kind: kind, dueAt: dueAt($0)) }
            try await queue.database.transaction { tx in _ = try await queue.enqueue(contentsOf: jobs, on: tx) }
            index += jobs.count
        }
        queue.wake()
    }

    /// Waits until no job of `kind` due by `lastDue` is pending or running. Each query stays on
    /// one partial index (pending by due time, running by lease), so polling does not read the
    /// million rows the benchmark keeps in the table.
    static func waitUntilDone(_ database: any Database, kind: String, lastDue: Date) async throws {
        while true {
            let pending = try await database.queryFirst(
                "SELECT id FROM jobs WHERE status = 'pending' AND due_at <= $2 AND kind = $1 LIMIT 1",
                [.text(kind), SQLValue(lastDue)]
            )
            let running = try await database.queryFirst(
                "SELECT id FROM jobs WHERE status = 'running' AND kind = $1 LIMIT 1",
                [.text(kind)]
            )
            if pending == nil, running == nil { return }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    static func seconds(since start: ContinuousClock.Instant) -> Double {
        let (whole, fraction) = (ContinuousClock.now - start).components
        return Double(whole) + Double(fraction) / 1e18
    }

    /// The workers: child processes, or one worker task in this process.
    final class Workers: Sendable {
        private let processes: [ChildProcess]
        private let task: Task<Void, any Error>?
        private let worker: JobWorker?

        init(settings: Settings, queue: JobQueue, logger: Logger) throws {
            if settings.instances == 0 {
                let worker = JobWorker(
                    queue: queue,
                    configuration: workerConfiguration(concurrency: settings.concurrency),
                    owner: ProcessIdentity.jobOwner(),
                    logger: logger
                )
                self.worker = worker
                self.task = Task { try await worker.run() }
                self.processes = []
                return
            }
            worker = nil
            task = nil
            let executable = URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL.path
            processes = try (0..<settings.instances).map { _ in
                // The workers log to this process's standard output and error.
                try ChildProcess(
                    executable: executable,
                    arguments: [
                        "jobs", "work", "--database-url", settings.url, "--concurrency", String(settings.concurrency),
                    ],
                    standardOutput: .inherit,
                    standardError: .inherit
                )
            }
        }

        func stop() async {
            worker?.triggerGracefulShutdown()
            _ = try? await task?.value
            for process in processes { process.signal(SIGTERM) }
            // Only cancellation ends a wait early, and then the child's deinit kills it.
            for process in processes { _ = try? await process.waitForExit() }
        }
    }
}
