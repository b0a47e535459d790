public import APNs
public import Audiences
import Devices
public import Foundation
public import Jobs

/// How a schedule wakes its app.
public enum WakeMode: String, Sendable, Hashable, CaseIterable {
    /// A background push to every active device of an audience in Herald's registry.
    case apns
    /// A record in the app's public CloudKit database; the app's query subscription makes Apple
    /// send the silent push.
    case cloudkit
}

/// The CloudKit environment a CloudKit-mode schedule writes to.
public enum WakeCloudKitEnvironment: String, Sendable, Hashable, CaseIterable {
    case production
    case development
}

/// Where a CloudKit-mode run creates its record, and how many records it keeps.
public struct WakeCloudKitTarget: Sendable, Hashable {
    public var container: String
    public var environment: WakeCloudKitEnvironment
    public var recordType: String
    public var field: String
    public var keep: Int

    public init(
        container: String,
        environment: WakeCloudKitEnvironment,
        recordType: String = "WakePing",
        field: String = "ts",
        keep: Int = 3
    ) {
        self.container = container
        self.environment = environment
        self.recordType = recordType
        self.field = field
        self.keep = keep
    }
}

/// What an APNs-mode schedule sends to: an app, an environment, an audience, and extra top-level
/// keys of the payload beside `aps`.
public struct WakeAPNsTarget: Sendable, Hashable {
    public var app: String
    public var environment: APNSEnvironment
    public var audience: Audience
    /// A JSON object's text (`{}` when none), merged into `{"aps":{"content-available":1}}`.
    public var data: String

    public init(app: String, environment: APNSEnvironment, audience: Audience, data: String = "{}") {
        self.app = app
        self.environment = environment
        self.audience = audience
        self.data = data
    }
}

/// One wake schedule as stored.
public struct WakeSchedule: Sendable, Hashable, Identifiable {
    public var id: UUID
    public var name: String
    public var mode: WakeMode
    public var schedule: RecurrenceSchedule
    /// The window each run's sends are spread over, in seconds (0: all at once).
    public var jitterSeconds: Int64
    /// Set for ``WakeMode/apns``.
    public var apns: WakeAPNsTarget?
    /// Set for ``WakeMode/cloudkit``.
    public var cloudkit: WakeCloudKitTarget?
    public var paused: Bool
    /// Moves on with every change of the timing, so that the job of the old timing ends unrun.
    public var generation: Int64
    /// When the next run is due; `nil` while paused.
    public var nextRunAt: Date?
    public var lastRunAt: Date?
    public var createdAt: Date
    public var updatedAt: Date
}

/// One run of a schedule, as `GET /v1/wake-schedules/{id}` shows it.
public struct WakeRun: Sendable, Hashable {
    public enum Status: String, Sendable, Hashable {
        /// Sending now (or interrupted; the job's next attempt resumes it).
        case running
        /// A retryable failure; the job tries again.
        case retrying
        case done
        case failed
    }

    public var occurrenceAt: Date
    public var mode: WakeMode
    public var status: Status
    public var startedAt: Date
    public var finishedAt: Date?
    /// Devices of the audience read (APNs mode).
    public var devices: Int
    public var sent: Int
    /// Devices left out because they had a wake ping within the minimum interval.
    public var skipped: Int
    public var failed: Int
    /// The CloudKit record created (CloudKit mode).
    public var recordName: String?
    /// CloudKit's error codes met during the run, in order (a failed cleanup's too).
    public var errorCodes: [String]
    public var error: String?
}

/// The limits on wake schedules.
public enum WakeLimits {
    /// Bytes of a request body.
    public static let maximumBodyBytes = 1 << 20
    public static let maximumDepth = 16
    /// Characters of a name.
    public static let maximumNameLength = 100
    /// Bytes of `data` as compact JSON.
    public static let maximumDataBytes = 2_048
    /// The shortest interval.
    public static let minimumIntervalSeconds: Int64 = 10
    /// Schedules per server.
    public static let maximumSchedules = 1_000
    /// Bytes of a CloudKit container, record type or field name.
    public static let maximumCloudKitNameBytes = 255
    /// Records a CloudKit-mode schedule keeps.
    public static let keepRange = 1...200
    /// Runs kept and shown per schedule.
    public static let keptRuns = 50
}
