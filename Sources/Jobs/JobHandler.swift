public import Foundation
public import HeraldCore

/// What a handler reports about one attempt.
public enum JobOutcome: Sendable, Hashable {
    /// The work is done.
    case done
    /// It failed in a way a later attempt may fix; runs again after the kind's backoff (or `after`
    /// seconds) while attempts remain, then the job is `dead`.
    case retry(reason: String, after: TimeInterval? = nil)
    /// It failed in a way no retry can fix (bad payload, a rejected request): the job is `failed`.
    case failed(reason: String)
    /// It could not start for a reason that is not a failure (another worker holds what it needs
    /// until `until`): runs again then, with this attempt not counted.
    case postpone(reason: String, until: Date)
}

/// Runs the jobs of one kind. A thrown error counts as ``JobOutcome/retry(reason:after:)``.
///
/// Handlers must tolerate running a job twice: an instance that dies after the work but before
/// recording it leaves the job to be run again when its lease expires.
public protocol JobHandler: Sendable {
    func run(_ job: Job) async throws -> JobOutcome
}

/// A handler made of a closure.
public struct ClosureJobHandler: JobHandler {
    private let body: @Sendable (Job) async throws -> JobOutcome

    public init(_ body: @escaping @Sendable (Job) async throws -> JobOutcome) {
        self.body = body
    }

    public func run(_ job: Job) async throws -> JobOutcome {
        try await body(job)
    }
}

/// Per-kind limits: attempts and the retry backoff.
public struct JobKindOptions: Sendable, Hashable {
    /// Attempts before a retryable failure makes the job `dead` (1…100).
    public var maxAttempts: Int
    /// Delay before the first retry; doubles with each attempt.
    public var retryBase: TimeInterval
    /// The longest delay between attempts.
    public var retryMaximum: TimeInterval

    public init(maxAttempts: Int = 5, retryBase: TimeInterval = 1, retryMaximum: TimeInterval = 3_600) {
        self.maxAttempts = maxAttempts
        self.retryBase = retryBase
        self.retryMaximum = retryMaximum
    }

    /// The delay before the attempt after `attempt` (1-based): `retryBase × 2^(attempt-1)`, capped
    /// at ``retryMaximum``, scaled by `jitter` in 0.5…1 so that jobs failing together do not retry
    /// together.
    public func retryDelay(afterAttempt attempt: Int, jitter: Double) -> TimeInterval {
        retryBackoff.delay(afterAttempt: attempt, fraction: jitter).timeInterval
    }

    /// The retry waits as HeraldCore's one backoff type: equal jitter under the doubling ceiling.
    public var retryBackoff: Backoff {
        Backoff(
            initial: Duration(timeInterval: retryBase),
            maximum: Duration(timeInterval: retryMaximum),
            jitter: .equal
        )
    }
}

/// The handlers this process can run, by kind, with each kind's options.
public struct JobHandlers: Sendable {
    struct Entry: Sendable {
        var options: JobKindOptions
        var handler: any JobHandler
        var onGiveUp: (@Sendable (Job, String) async -> Void)?
    }

    private(set) var entries: [String: Entry] = [:]

    /// Options for kinds without their own.
    public var defaultOptions = JobKindOptions()

    public init() {}

    /// Adds (or replaces) the handler of `kind`.
    ///
    /// - Parameter onGiveUp: called when the last attempt of a job ends in a retryable failure
    ///   (returned or thrown), just before the job becomes `dead`, with the failure's text: the
    ///   place to mark the work's own records failed. Errors there are the hook's to handle.
    public mutating func register(
        _ kind: String,
        options: JobKindOptions = JobKindOptions(),
        handler: any JobHandler,
        onGiveUp: (@Sendable (Job, String) async -> Void)? = nil
    ) {
        entries[kind] = Entry(options: options, handler: handler, onGiveUp: onGiveUp)
    }

    /// Adds (or replaces) the handler of `kind`, given as a closure.
    public mutating func register(
        _ kind: String,
        options: JobKindOptions = JobKindOptions(),
        onGiveUp: (@Sendable (Job, String) async -> Void)? = nil,
        _ body: @escaping @Sendable (Job) async throws -> JobOutcome
    ) {
        register(kind, options: options, handler: ClosureJobHandler(body), onGiveUp: onGiveUp)
    }

    /// Adds every kind of `other`, with its options and give-up hook; a kind both have takes
    /// `other`'s.
    public mutating func merge(_ other: JobHandlers) {
        entries.merge(other.entries) { _, theirs in theirs }
    }

    func giveUpHook(for kind: String) -> (@Sendable (Job, String) async -> Void)? {
        entries[kind]?.onGiveUp
    }

    public func options(for kind: String) -> JobKindOptions {
        entries[kind]?.options ?? defaultOptions
    }

    func handler(for kind: String) -> (any JobHandler)? {
        entries[kind]?.handler
    }

    /// The registered kinds, sorted.
    public var kinds: [String] { entries.keys.sorted() }
}
