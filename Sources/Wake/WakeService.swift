public import APNs
import Audiences
import Devices
public import Foundation
import HeraldCore
public import Jobs
import Storage

/// Creates, changes and deletes wake schedules, each with the job of its next run in the same
/// transaction (so an answered POST is durable), and reads them back with their runs.
public struct WakeService: Sendable {
    public let store: WakeStore
    public let queue: JobQueue
    /// The apps APNs-mode schedules may name; the first is the default.
    public let apps: [APNSAppConfiguration]
    /// Whether CloudKit-mode schedules can run (a publisher is configured).
    public let cloudKitConfigured: Bool
    public var maximumSchedules: Int

    public init(
        store: WakeStore,
        queue: JobQueue,
        apps: [APNSAppConfiguration],
        cloudKitConfigured: Bool,
        maximumSchedules: Int = WakeLimits.maximumSchedules
    ) {
        self.store = store
        self.queue = queue
        self.apps = apps
        self.cloudKitConfigured = cloudKitConfigured
        self.maximumSchedules = maximumSchedules
    }

    /// The time on the service's clock, the `now` a request is parsed against (it checks the jitter).
    public func now() -> Date {
        queue.clock.now()
    }

    public func create(_ request: WakeScheduleRequest) async throws -> WakeSchedule {
        let now = queue.clock.now()
        var apns: WakeAPNsTarget?
        switch request.mode {
        case .apns:
            let (app, environment) = try resolve(app: request.app, environment: request.environment)
            apns = WakeAPNsTarget(
                app: app.bundleID,
                environment: environment,
                audience: request.audience ?? .all,
                data: request.data ?? "{}"
            )
        case .cloudkit:
            guard cloudKitConfigured else {
                throw WakeError(
                    .notConfigured,
                    code: "cloudkit_not_configured",
                    message: "CloudKit is not configured on this server: set CLOUDKIT_KEY_ID and CLOUDKIT_PRIVATE_KEY "
                        + "(or CLOUDKIT_PRIVATE_KEY_FILE) and restart, or use mode \"apns\"",
                    field: "mode"
                )
            }
        }
        let schedule = WakeSchedule(
            id: ResourceIdentifier.next(),
            name: request.name,
            mode: request.mode,
            schedule: request.schedule,
            jitterSeconds: request.jitterSeconds,
            apns: apns,
            cloudkit: request.cloudkit,
            paused: request.paused,
            generation: 1,
            nextRunAt: request.paused ? nil : request.schedule.nextOccurrence(after: now),
            lastRunAt: nil,
            createdAt: now,
            updatedAt: now
        )
        let limit = maximumSchedules
        try await store.database.transaction { tx in
            guard try await store.count(on: tx) < limit else {
                throw WakeError(
                    .limitReached,
                    code: "too_many_schedules",
                    message:
                        "this server has \(limit) wake schedules, the most it keeps: delete one you no longer need",
                    field: nil
                )
            }
            try await store.insert(schedule, on: tx)
            try await enqueueNext(of: schedule, on: tx)
        }
        queue.wake()
        return schedule
    }

    /// Applies `patch`; a change of timing (paused, every, cron, timezone) computes the next run
    /// again from now, and the job of the old timing ends without running.
    public func update(id: UUID, _ patch: WakeSchedulePatch) async throws -> WakeSchedule {
        let now = queue.clock.now()
        let updated = try await store.database.transaction { tx -> WakeSchedule in
            guard var schedule = try await store.schedule(id: id, on: tx) else { throw WakeError.notFound(for: id) }
            if let name = patch.name { schedule.name = name }
            if let paused = patch.paused { schedule.paused = paused }
            if let every = patch.every { schedule.schedule = .interval(seconds: every) }
            if patch.cron != nil || patch.timezone != nil {
                var expression = patch.cron
                if expression == nil, case .cron(let current, _) = schedule.schedule {
                    expression = current.description
                }
                guard let expression else {
                    throw WakeError.invalid(
                        "invalid_timezone",
                        "timezone goes with cron: this schedule runs every \(DurationText.text(schedule.intervalSeconds ?? 0))",
                        field: "timezone"
                    )
                }
                var zone = patch.timezone
                if zone == nil, case .cron(_, let current) = schedule.schedule, patch.cron != nil {
                    zone = current.identifier
                }
                guard
                    let parsed = try WakeInput.schedule(
                        every: JSONValue?.none,
                        cron: .string(expression),
                        timezone: zone.map(JSONValue.string)
                    )
                else {
                    throw WakeError.invalid("invalid_cron", "cron is required with timezone", field: "cron")
                }
                schedule.schedule = parsed
            }
            if let jitter = patch.jitterSeconds { schedule.jitterSeconds = jitter }
            try WakeInput.checkJitter(schedule.jitterSeconds, schedule: schedule.schedule, now: now)
            if patch.data != nil || patch.audience != nil {
                guard var apns = schedule.apns else {
                    throw WakeError.unknownField(
                        "data and audience go with mode \"apns\"; this schedule is in mode \"\(schedule.mode.rawValue)\"",
                        field: patch.data != nil ? "data" : "audience"
                    )
                }
                if let data = patch.data { apns.data = data }
                if let audience = patch.audience { apns.audience = audience }
                schedule.apns = apns
            }
            if patch.changesTiming {
                schedule.generation += 1
                schedule.nextRunAt = schedule.paused ? nil : schedule.schedule.nextOccurrence(after: now)
            }
            schedule.updatedAt = now
            try await store.update(schedule, on: tx)
            if patch.changesTiming { try await enqueueNext(of: schedule, on: tx) }
            return schedule
        }
        queue.wake()
        return updated
    }

    public func delete(id: UUID) async throws {
        guard try await store.delete(id: id) else { throw WakeError.notFound(for: id) }
    }

    public func schedule(id: UUID) async throws -> (WakeSchedule, [WakeRun]) {
        guard let schedule = try await store.schedule(id: id) else { throw WakeError.notFound(for: id) }
        return (schedule, try await store.runs(scheduleID: id))
    }

    /// A page of schedules after `cursor` (the previous page's last), and the next page's cursor.
    public func list(limit: Int, after cursor: WakeListCursor?) async throws -> (items: [WakeSchedule], next: String?) {
        let page = try await store.list(limit: limit, after: cursor)
        return (page.items, page.next?.text)
    }

    private func resolve(
        app: String?,
        environment: APNSEnvironment?
    ) throws(WakeError) -> (
        APNSAppConfiguration, APNSEnvironment
    ) {
        do {
            return try APNSAppConfiguration.resolve(in: apps, app: app, environment: environment)
        } catch {
            switch error {
            case .noApps:
                throw WakeError(.notConfigured, code: "apns_not_configured", message: error.message, field: "mode")
            case .unknownApp: throw .invalid("unknown_app", error.message, field: "app")
            case .environmentNotServed: throw .invalid("invalid_environment", error.message, field: "environment")
            }
        }
    }

    /// Adds the job of the schedule's next run (none while paused).
    func enqueueNext(of schedule: WakeSchedule, on executor: any DatabaseExecutor) async throws {
        guard let due = schedule.nextRunAt, !schedule.paused else { return }
        _ = try await queue.enqueue(WakeJob.newJob(schedule: schedule, due: due), on: executor)
    }
}

extension WakeSchedule {
    /// The interval of an `every` schedule.
    var intervalSeconds: Int64? {
        if case .interval(let seconds) = schedule { return seconds }
        return nil
    }
}

extension WakeError {
    static func notFound(for id: UUID) -> WakeError {
        WakeError(
            .notFound,
            code: "not_found",
            message:
                "no wake schedule has the id \(RequestIdentifier.lowercaseString(id)): use an id GET /v1/wake-schedules lists",
            field: "id"
        )
    }
}

/// The `wake.run` job of one occurrence: `{"schedule_id", "generation", "due_at"}` (ms).
enum WakeJob {
    static let kind = "wake.run"

    struct Payload: Sendable, Hashable {
        var scheduleID: UUID
        var generation: Int64
        var due: Date
    }

    static func newJob(schedule: WakeSchedule, due: Date) -> NewJob {
        let id = RequestIdentifier.lowercaseString(schedule.id)
        let ms = EpochTime.milliseconds(due)
        return NewJob(
            kind: kind,
            payload: #"{"schedule_id":"\#(id)","generation":\#(schedule.generation),"due_at":\#(ms)}"#,
            dueAt: due,
            uniqueKey: "wake:\(id):\(schedule.generation):\(ms)"
        )
    }

    static func payload(_ text: String) -> Payload? {
        guard let object = try? JSONValue.parse(Array(text.utf8)),
            let id = object["schedule_id"]?.stringValue.flatMap(UUID.init(uuidString:)),
            case .integer(let generation)? = object["generation"],
            case .integer(let ms)? = object["due_at"]
        else { return nil }
        return Payload(
            scheduleID: id,
            generation: generation,
            due: Date(timeIntervalSince1970: TimeInterval(ms) / 1000)
        )
    }
}
