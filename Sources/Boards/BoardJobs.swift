import APNs
import Audiences
import Foundation
public import HeraldCore
public import Jobs
public import LiveActivities
public import Notifications
public import Storage

/// The boards' job kinds; each payload is the activity's id.
public enum BoardJobKind {
    /// Ends a board's activity `end_when_all_arrived` after its last member arrived.
    public static let end = "board.end"
    /// Sends the nudge to the members who posted nothing, `nudge.after` the start.
    public static let nudge = "board.nudge"
    /// Deletes the boards whose activity the activities' retention deleted.
    public static let prune = "boards.prune"

    static func endJob(_ id: UUID, at dueAt: Date) -> NewJob {
        NewJob(
            kind: end,
            payload: LiveActivityID.text(id),
            dueAt: dueAt,
            uniqueKey: "\(end):\(LiveActivityID.text(id))"
        )
    }

    static func nudgeJob(_ id: UUID, at dueAt: Date) -> NewJob {
        NewJob(
            kind: nudge,
            payload: LiveActivityID.text(id),
            dueAt: dueAt,
            uniqueKey: "\(nudge):\(LiveActivityID.text(id))"
        )
    }
}

/// Sends a board's nudge: an alert push to the members' registered devices. `herald serve` sends
/// it as a notification to the users (``NotificationNudger``).
public protocol BoardNudger: Sendable {
    func nudge(_ activity: LiveActivity, users: [String], alert: LiveActivityAlert) async throws
}

/// A nudge as a durable notification to the members' users: retried, its dead tokens reported
/// like any other.
public struct NotificationNudger: BoardNudger {
    let sender: NotificationSender
    let queue: AttachedJobQueue

    public init(sender: NotificationSender, queue: AttachedJobQueue) {
        self.sender = sender
        self.queue = queue
    }

    public func nudge(_ activity: LiveActivity, users: [String], alert: LiveActivityAlert) async throws {
        guard let queue = queue.queue else { throw CancellationError() }
        let payload: APNSJSONValue = .object([
            "aps": .object([
                "alert": .object(["title": .string(alert.title), "body": .string(alert.body)]),
                "sound": .string("default"),
            ])
        ])
        _ = try await NotificationService(queue: queue, sender: sender).create(
            NotificationRequest(
                app: activity.app,
                environment: activity.environment,
                audience: .users(users),
                payload: try payload.encodedPayload()
            )
        )
    }
}

/// Gives each activity created with a board its row and its nudge job, in the creating
/// transaction.
public struct BoardCreationHook: LiveActivityCreationHook {
    let store: BoardStore
    let clock: any HeraldClock

    public init(store: BoardStore, clock: any HeraldClock) {
        self.store = store
        self.clock = clock
    }

    public func created(_ activity: LiveActivity, on executor: any DatabaseExecutor, queue: JobQueue) async throws {
        guard let board = activity.request.board else { return }
        try await store.insert(activity.id, at: clock.now(), on: executor)
        if let nudge = board.nudge {
            let start = activity.startAt ?? activity.createdAt
            _ = try await queue.enqueue(
                BoardJobKind.nudgeJob(activity.id, at: start.addingTimeInterval(TimeInterval(nudge.after))),
                on: executor
            )
        }
    }
}

/// The boards' job handlers.
public struct BoardJobs: Sendable {
    let hub: BoardHub
    let nudger: any BoardNudger

    public init(hub: BoardHub, nudger: any BoardNudger) {
        self.hub = hub
        self.nudger = nudger
    }

    public func register(on handlers: inout JobHandlers) {
        handlers.register(BoardJobKind.end) { job in try await end(job) }
        handlers.register(BoardJobKind.nudge) { job in try await nudge(job) }
    }

    /// The hourly prune of boards whose activity is gone.
    public var prune: HourlyJob {
        let store = hub.store
        return HourlyJob(kind: BoardJobKind.prune) { _ in _ = try await store.prune() }
    }

    private func id(_ job: Job) -> UUID? { UUID(uuidString: job.payload) }

    /// Ends the activity, once; one that ended meanwhile stays as it is.
    func end(_ job: Job) async throws -> JobOutcome {
        guard let id = id(job) else { return .failed(reason: "the payload is not an activity id") }
        do {
            // The last arrivals may not have been broadcast yet: the end carries the board as it stands.
            let content = try await hub.finalContent(id)
            let end = LiveActivityUpdate(event: .end, contentState: content ?? .object([:]))
            _ = try await hub.jobs.acceptor.accept(end, for: id, keepContent: content == nil, reason: .allArrived)
        } catch let error as LiveActivityError where error.code == "not_started" || error.code == "not_found" {
            // Ended (or deleted) already: nothing to do.
        }
        await hub.forget(id)
        return .done
    }

    /// Nudges the members who posted nothing, once.
    func nudge(_ job: Job) async throws -> JobOutcome {
        guard let id = id(job) else { return .failed(reason: "the payload is not an activity id") }
        guard let activity = try await hub.jobs.store.activity(id), let nudge = activity.request.board?.nudge,
            let members = activity.request.members
        else { return .done }
        switch activity.state {
        case .scheduled:
            // Its push-to-start is late: nudge once it started.
            return .postpone(reason: "the activity has not started yet", until: hub.clock.now().addingTimeInterval(60))
        case .started:
            break
        default:
            return .done
        }
        guard try await !hub.store.nudged(id) else { return .done }
        let posted = try await hub.store.members(of: id).posted
        let quiet = members.map(\.userID).filter { posted[$0] == nil }
        if !quiet.isEmpty { try await nudger.nudge(activity, users: quiet, alert: nudge.alert) }
        _ = try await hub.store.markNudged(id, at: hub.clock.now())
        return .done
    }
}
