import Foundation
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
        var id: UUID?
        if needsID {
            guard parsed.positionals.count == 2, let parsedID = UUID(uuidString: parsed.positionals[1]) else {
                printError("herald jobs \(action): give the job's id (a UUID), e.g. herald jobs \(action) 3f2a…")
                return 2
            }
            id = parsedID
        } else if parsed.positionals.count != 1 {
            printError("herald jobs \(action): unexpected argument '\(parsed.positionals[1])'")
            return 2
        }
        let url = parsed.value("database-url") ?? ProcessInfo.processInfo.environment["DATABASE_URL"]
        let logger = Logger(label: "herald.jobs", level: .warning)
        let database: any Database
        do {
            database = try await DatabaseFactory.open(url: url ?? "sqlite:herald.sqlite", logger: logger)
        } catch {
            printError("herald jobs: \(error)")
            return 1
        }
        do {
            try await Migrator.migrate(database, HeraldMigrations.all, logger: logger)
            let queue = JobQueue(database: database, handlers: JobHandlers())
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
