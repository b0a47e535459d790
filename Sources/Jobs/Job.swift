public import Foundation

/// Where a job is in its life.
///
/// ```
/// pending ──claim──▶ running ──done──▶ done
///    ▲  ▲               │ retryable error, attempts left ─▶ pending (due later)
///    │  └─lease expired─┤ retryable error, none left ─────▶ dead
///    │                  └ permanent error ─────────────────▶ failed
///    └──── herald jobs retry ◀── failed | dead | cancelled
/// pending ──cancel──▶ cancelled
/// ```
public enum JobStatus: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Waiting for its due time (also between retries).
    case pending
    /// Claimed by an instance that holds its lease.
    case running
    /// Finished successfully.
    case done
    /// Finished with an error that retrying cannot fix.
    case failed
    /// Cancelled before it started.
    case cancelled
    /// Every attempt failed; kept for inspection and `herald jobs retry`.
    case dead

    public var description: String { rawValue }

    /// Whether the job will not run again unless someone retries it.
    public var isFinished: Bool {
        switch self {
        case .pending, .running: false
        case .done, .failed, .cancelled, .dead: true
        }
    }
}

/// What a recurring job does about occurrences that passed while no instance was running.
public enum MissedRunPolicy: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Drop them; the next run is the next occurrence after now.
    case skip
    /// Run once now for all of them, then continue with the next occurrence after now.
    case runOnce = "run_once"

    public var description: String { rawValue }
}

/// One durable unit of work: a kind that names its handler, a JSON payload, and when to run it.
public struct Job: Sendable, Hashable, Identifiable {
    public var id: UUID
    /// Names the handler, e.g. `notification.send`.
    public var kind: String
    /// JSON text the handler reads.
    public var payload: String
    public var status: JobStatus
    /// When it should start (for a pending job after a failure: when it is retried).
    public var dueAt: Date
    /// Attempts started so far, including the running one.
    public var attempts: Int
    public var maxAttempts: Int
    public var lastError: String?
    /// The instance holding the lease while running.
    public var leaseOwner: String?
    public var leaseExpiresAt: Date?
    /// At most one pending or running job has a given unique key.
    public var uniqueKey: String?
    /// For recurring jobs: when the next one is due.
    public var schedule: RecurrenceSchedule?
    public var missedRuns: MissedRunPolicy
    public var createdAt: Date
    public var updatedAt: Date
    /// When the latest attempt started.
    public var startedAt: Date?
    public var finishedAt: Date?
}

/// A job to add to the queue.
public struct NewJob: Sendable, Hashable {
    public var kind: String
    public var payload: String
    /// When to run it; `nil` means now.
    public var dueAt: Date?
    /// Overrides the kind's default (``JobKindOptions/maxAttempts``).
    public var maxAttempts: Int?
    /// Idempotent scheduling: adding a job whose key names a pending or running job returns that
    /// job instead of adding another.
    public var uniqueKey: String?
    public var schedule: RecurrenceSchedule?
    public var missedRuns: MissedRunPolicy

    public init(
        kind: String,
        payload: String = "{}",
        dueAt: Date? = nil,
        maxAttempts: Int? = nil,
        uniqueKey: String? = nil,
        schedule: RecurrenceSchedule? = nil,
        missedRuns: MissedRunPolicy = .runOnce
    ) {
        self.kind = kind
        self.payload = payload
        self.dueAt = dueAt
        self.maxAttempts = maxAttempts
        self.uniqueKey = uniqueKey
        self.schedule = schedule
        self.missedRuns = missedRuns
    }
}

/// Why a job could not be added, cancelled or retried; the message says what to fix.
public struct JobError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        /// The job, kind, payload or schedule is not acceptable.
        case invalid
        /// No job has that id.
        case notFound = "not_found"
        /// The job's status does not allow it (cancel a running job, retry a pending one).
        case conflict
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
