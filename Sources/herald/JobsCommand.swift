import Foundation
import HeraldAPI
import HeraldCore
import Jobs
import Storage

/// `herald jobs`: look at and act on the durable job queue of the database `DATABASE_URL` names.
enum JobsCommand {
    static let spec = CommandSpec(
        name: "herald jobs",
        summary: "List, inspect, retry and cancel durable jobs; show the queue's depth and oldest due job.",
        usage: """
            herald jobs stats | list [--status S] [--kind K] [--limit N] | inspect ID | retry ID | cancel ID
                   [--database-url URL]
                   herald jobs bench --help (the queue benchmark)
            """,
        options: [
            .init("database-url", value: "URL", help: "sqlite:PATH or postgres://… (default: DATABASE_URL)."),
            .init(
                "status",
                value: "S",
                repeatable: true,
                help: "list: only jobs with this status (pending, running, done, failed, cancelled, dead)."
            ),
            .init("kind", value: "K", help: "list: only jobs of this kind."),
            .init("limit", value: "N", help: "list: at most N jobs, newest first (default 50)."),
        ]
    )

    static func run(_ arguments: [String]) async -> Int32 {
        switch arguments.first {
        case "bench": return await JobsBenchCommand.run(Array(arguments.dropFirst()))
        case "work": return await JobsBenchCommand.work(Array(arguments.dropFirst()))
        default: break
        }
        let parsed: ParsedArguments
        let statuses: [JobStatus]
        let limit: Int
        do throws(UsageError) {
            parsed = try spec.parse(arguments)
            statuses = try parsed.all("status").map { text throws(UsageError) in
                guard let status = JobStatus(rawValue: text) else {
                    let known = JobStatus.allCases.map(\.rawValue).joined(separator: ", ")
                    throw UsageError("--status \(text) is not a status: use one of \(known)")
                }
                return status
            }
            limit = try parsed.integer("limit", default: 50, range: 1...10_000)
        } catch {
            printError("herald jobs: \(error.message)")
            return 2
        }
        if parsed.wantsHelp || parsed.positionals.isEmpty {
            print(spec.help, terminator: "")
            return parsed.wantsHelp ? 0 : 2
        }
        let action = parsed.positionals[0]
        let needsID = ["inspect", "retry", "cancel"].contains(action)
        guard needsID || ["stats", "list"].contains(action) else {
            printError("herald jobs: unknown action '\(action)'; use stats, list, inspect, retry, cancel or bench")
            return 2
        }
        var idArgument: String?
        if needsID {
            guard parsed.positionals.count == 2 else {
                printError(
                    "herald jobs \(action): give the job's id or its first characters, e.g. herald jobs \(action) 3f2a9c1e"
                )
                return 2
            }
            idArgument = parsed.positionals[1]
        } else if parsed.positionals.count != 1 {
            printError("herald jobs \(action): unexpected argument '\(parsed.positionals[1])'")
            return 2
        }
        let given = parsed.value("database-url") ?? Setting.databaseURL.processValue
        let url: String
        switch existingDatabase(given ?? "sqlite:herald.sqlite", given: given != nil) {
        case .success(let existing): url = existing
        case .failure(let problem):
            printError("herald jobs \(action): \(problem.message)")
            return 2
        }
        // Which database this reads, so an empty answer from the wrong one is not mistaken for an empty queue.
        printError("database: \(DatabaseFactory.redact(url: url))")
        let logger = Logger(label: "herald.jobs", level: .warning)
        let database: any Database
        do {
            database = try await DatabaseFactory.open(url: url, logger: logger)
        } catch {
            printError("herald jobs: \(error)")
            return 1
        }
        do {
            try await Migrator.migrate(database, HeraldSchema.migrations, logger: logger)
            let queue = JobQueue(database: database, handlers: JobHandlers())
            var id: UUID?
            if let idArgument {
                switch try await resolve(idArgument, in: database) {
                case .success(let resolved): id = resolved
                case .failure(let problem):
                    printError("herald jobs \(action): \(problem.message)")
                    await database.close()
                    return 2
                }
            }
            switch (action, id) {
            case ("stats", _):
                print(render(try await queue.summary(), now: Date()), terminator: "")
            case ("list", _):
                let jobs = try await queue.list(statuses: statuses, kind: parsed.value("kind"), limit: limit)
                print(table(jobs), terminator: "")
            case ("inspect", let id?):
                guard let job = try await queue.job(id: id) else {
                    printError("herald jobs inspect: no job has the id \(id.uuidString.lowercased())")
                    await database.close()
                    return 1
                }
                print(details(job), terminator: "")
            case ("retry", let id?):
                let job = try await queue.retry(id: id)
                print("job \(job.id.uuidString.lowercased()) is pending again, due now")
            case ("cancel", let id?):
                let job = try await queue.cancel(id: id)
                print("job \(job.id.uuidString.lowercased()) cancelled")
            default:
                break
            }
        } catch let error as JobError {
            printError("herald jobs \(action): \(error.message)")
            await database.close()
            return 1
        } catch {
            printError("herald jobs \(action): \(error)")
            await database.close()
            return 1
        }
        await database.close()
        return 0
    }

    /// `url` with a SQLite path made absolute, or why it cannot be read: these commands never
    /// create a database (SQLite would create an empty file and report an empty queue).
    static func existingDatabase(_ url: String, given: Bool) -> Result<String, UsageError> {
        guard case .sqlite(let path)? = try? DatabaseURL(parsing: url), path != ":memory:" else { return .success(url) }
        let absolute = URL(fileURLWithPath: path).standardizedFileURL.path
        guard FileManager.default.fileExists(atPath: absolute) else {
            let origin = given ? "" : " (DATABASE_URL is unset, so the default sqlite:herald.sqlite in this folder)"
            return .failure(
                UsageError(
                    "no database at \(absolute)\(origin); set DATABASE_URL (or --database-url) to the one herald serve uses"
                )
            )
        }
        return .success("sqlite:" + absolute)
    }

    /// The job whose id is `text` or starts with it (at least 4 hex digits, as git takes a short
    /// commit id); a prefix two jobs share lists them.
    static func resolve(_ text: String, in database: any Database) async throws -> Result<UUID, UsageError> {
        if let id = RequestIdentifier.uuid(text) { return .success(id) }
        let prefix = text.lowercased()
        let hexDigits = prefix.filter(\.isHexDigit).count
        guard prefix.allSatisfy({ $0.isHexDigit || $0 == "-" }), prefix.count <= 36 else {
            return .failure(UsageError("'\(text)' is not a job id: give the id (a UUID) or its first characters"))
        }
        guard hexDigits >= 4 else {
            return .failure(UsageError("'\(text)' is too short: give at least 4 characters of the job's id"))
        }
        // Only hex digits and dashes reach LIKE, so the pattern has no wildcard but the last.
        let rows = try await database.query(
            "SELECT id FROM jobs WHERE id LIKE $1 ORDER BY id LIMIT 11",
            [.text(prefix + "%")]
        )
        let ids = try rows.map { try $0.string("id") }
        switch ids.count {
        case 0:
            return .failure(UsageError("no job's id starts with \(prefix); see herald jobs list"))
        case 1:
            guard let id = RequestIdentifier.uuid(ids[0]) else {
                return .failure(UsageError("job id \(ids[0]) in the database is not a UUID"))
            }
            return .success(id)
        default:
            let shown = ids.prefix(10).joined(separator: "\n  ")
            let more = ids.count > 10 ? "\n  …" : ""
            return .failure(
                UsageError(
                    "\(prefix) is ambiguous: it starts these jobs' ids; give more characters:\n  \(shown)\(more)"
                )
            )
        }
    }

    static func render(_ summary: JobQueue.Summary, now: Date) -> String {
        var text = "queue depth:\n"
        for status in JobStatus.allCases {
            text += "  \(status.rawValue.padding(toLength: 10, withPad: " ", startingAt: 0)) \(summary.count(status))\n"
        }
        if let oldest = summary.oldestDue {
            let age = Int(now.timeIntervalSince(oldest).rounded())
            text += "oldest due job: due \(RFC3339.string(from: oldest)) (waiting \(age) s)\n"
        } else {
            text += "oldest due job: none is due\n"
        }
        text += "next due: \(summary.nextDue.map { RFC3339.string(from: $0) } ?? "nothing pending")\n"
        return text
    }

    static func table(_ jobs: [Job]) -> String {
        guard !jobs.isEmpty else { return "no jobs\n" }
        var text =
            "ID                                    KIND                 STATUS     DUE                  TRIES  ERROR\n"
        for job in jobs {
            let kind = job.kind.count > 20 ? String(job.kind.prefix(19)) + "…" : job.kind
            let error = (job.lastError ?? "").split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
            text +=
                [
                    job.id.uuidString.lowercased(),
                    kind.padding(toLength: 20, withPad: " ", startingAt: 0),
                    job.status.rawValue.padding(toLength: 10, withPad: " ", startingAt: 0),
                    RFC3339.string(from: job.dueAt),
                    "\(job.attempts)/\(job.maxAttempts)".padding(toLength: 6, withPad: " ", startingAt: 0),
                    String(error.prefix(60)),
                ].joined(separator: " ") + "\n"
        }
        return text
    }

    static func details(_ job: Job) -> String {
        let dates: [(String, Date?)] = [
            ("due_at", job.dueAt), ("created_at", job.createdAt), ("updated_at", job.updatedAt),
            ("started_at", job.startedAt), ("finished_at", job.finishedAt), ("lease_expires_at", job.leaseExpiresAt),
        ]
        var lines = [
            "id: \(job.id.uuidString.lowercased())", "kind: \(job.kind)", "status: \(job.status)",
            "attempts: \(job.attempts) of \(job.maxAttempts)",
        ]
        for (name, date) in dates { lines.append("\(name): \(date.map { RFC3339.string(from: $0) } ?? "-")") }
        lines += [
            "lease_owner: \(job.leaseOwner ?? "-")", "unique_key: \(job.uniqueKey ?? "-")",
            "schedule: \(job.schedule?.jsonText ?? "-")", "missed_runs: \(job.missedRuns)",
            "last_error: \(job.lastError ?? "-")", "payload: \(job.payload)",
        ]
        return lines.joined(separator: "\n") + "\n"
    }
}
