import APNs
public import APNsTransport
import Devices
public import Foundation
public import HeraldCore
public import Jobs
import Storage

/// Sends one stored notification to its tokens that have no final result yet: concurrently,
/// at most ``maximumInFlight`` requests at a time (the pool spreads them over its connections'
/// streams), writing each result as APNs answers it, in a ``GroupCommit`` batch with the results
/// answered while the previous batch was written (at most ``flushEvery`` a transaction). A push
/// holds its slot until its result is written. The `notification.send` job runs it.
///
/// Idempotent by design: a token's row leaves `pending` only once APNs has answered for it, so a
/// send interrupted by a crash or a lost lease resends only tokens without a result (duplicates
/// are limited to the requests in flight at the crash). One sender at a time: a pass first claims
/// the notification for its owner (a compare-and-set), renews the claim while it sends, and a
/// second sender is refused while the claim is live.
public struct NotificationSender: Sendable {
    public let store: NotificationStore
    public let clients: APNSClientProvider
    public let clock: any HeraldClock
    /// Requests in flight at once for one notification.
    public var maximumInFlight: Int
    /// Results written per transaction at most: the largest batch of the ``GroupCommit`` that
    /// writes them.
    public var flushEvery: Int
    /// How long a sender's claim on a notification holds unless renewed (every third of it). It
    /// is shorter than the job lease, so that a job recovered from a dead instance finds the dead
    /// sender's claim expired.
    public var sendLease: TimeInterval
    /// Reads the devices of a `users`, `tags` or `all` audience when the send runs: the store's
    /// device registry unless another is given.
    public var resolver: any AudienceResolver
    /// Tokens read and sent per page: rows without a result, or devices from the registry.
    public var pageSize: Int
    let metrics: NotificationMetrics
    let logger: Logger

    public init(
        store: NotificationStore,
        clients: APNSClientProvider,
        clock: any HeraldClock = SystemClock(),
        maximumInFlight: Int = 1_000,
        flushEvery: Int = 500,
        sendLease: TimeInterval = 10,
        resolver: (any AudienceResolver)? = nil,
        pageSize: Int = 1_000,
        metrics: MetricsRegistry = .shared,
        logger: Logger = Logger(label: "herald.notifications")
    ) {
        self.store = store
        self.clients = clients
        self.clock = clock
        self.maximumInFlight = max(1, maximumInFlight)
        self.flushEvery = max(1, flushEvery)
        self.sendLease = max(1, sendLease)
        self.resolver = resolver ?? store.devices
        self.pageSize = max(1, pageSize)
        self.metrics = NotificationMetrics(registry: metrics)
        self.logger = logger
    }

    /// What one send pass achieved.
    public struct Summary: Sendable, Hashable {
        /// The notification's status afterwards.
        public var status: NotificationStatus
        /// Results recorded by this pass, by status.
        public var recorded: [DeliveryStatus: Int] = [:]
        /// Set when another sender holds the notification: when its claim ends unless renewed.
        /// This pass sent nothing.
        public var busyUntil: Date?

        /// Tokens left `retrying` for a later attempt.
        public var retrying: Int { recorded[.retrying] ?? 0 }
    }

    /// The job's handler: reads the notification id from the payload and sends.
    public func run(_ job: Job) async throws -> JobOutcome {
        guard let id = Self.notificationID(inPayload: job.payload) else {
            return .failed(reason: "the job payload has no notification_id")
        }
        let summary = try await send(id, isLastAttempt: job.attempts >= job.maxAttempts, owner: Self.owner(of: job))
        if let until = summary.busyUntil {
            // Not a failure: the holder sends it, or its claim lapses and this job takes over.
            return .postpone(
                reason: "another sender holds this notification until \(RFC3339.string(from: until))",
                until: max(until, clock.now()).addingTimeInterval(1)
            )
        }
        if summary.retrying > 0 {
            return .retry(reason: "\(summary.retrying) token(s) had retryable APNs failures")
        }
        return .done
    }

    /// The job's last attempt failed (a thrown error, such as the database being unreachable):
    /// the notification and its tokens without a final result become `failed`, so the notification
    /// does not stay `sending` for ever. Best effort: what the database refuses is logged, and
    /// `herald jobs retry` on the dead job sends the tokens still pending.
    func giveUp(_ job: Job, reason: String) async {
        guard let id = Self.notificationID(inPayload: job.payload) else { return }
        let now = clock.now()
        let text = "gave up after \(job.attempts) attempts: \(reason)"
        do {
            // Another sender (a ?wait=true request) still sending it finishes it.
            if let claim = try await store.liveSendClaim(id, at: now), claim.owner != Self.owner(of: job) { return }
            _ = try await store.transition(id, from: [.scheduled, .sending], to: .failed, failureReason: text, at: now)
            _ = try await store.failUnfinished(id, reason: text, at: now)
        } catch {
            logger.error(
                "could not mark a notification failed after its last attempt",
                metadata: ["notification": .string("\(id)"), "error": .string("\(error)")]
            )
        }
    }

    /// The sender name of one claim of `job`: a second run of the same job is a second sender.
    static func owner(of job: Job) -> String {
        "job:\(RequestIdentifier.lowercaseString(job.id)):\(job.attempts):\(job.leaseOwner ?? "")"
    }

    static func payload(for id: UUID) -> String {
        "{\"notification_id\":\"\(RequestIdentifier.lowercaseString(id))\"}"
    }

    static func notificationID(inPayload payload: String) -> UUID? {
        guard case .string(let text) = (try? JSONValue.parse(Array(payload.utf8)))?["notification_id"] else {
            return nil
        }
        return RequestIdentifier.uuid(text)
    }

    /// Sends the notification's unfinished tokens, unless another sender holds it.
    ///
    /// - Parameters:
    ///   - isLastAttempt: turns what would be `retrying` into `failed`, and the notification
    ///     `failed` when any token failed.
    ///   - owner: names this sender in the claim; unique per pass (the default is a new one).
    public func send(_ id: UUID, isLastAttempt: Bool, owner: String? = nil) async throws -> Summary {
        let owner = owner ?? "send:\(RequestIdentifier.lowercaseString(ResourceIdentifier.next()))"
        let now = clock.now()
        guard
            // `failed` too: an operator may retry the dead job of a notification given up on.
            let notification = try await store.claimSend(
                id,
                owner: owner,
                until: now.addingTimeInterval(sendLease),
                at: now
            )
        else {
            if let until = try await store.liveSendClaim(id, at: now)?.until {
                logger.debug(
                    "notification send refused: another sender holds it",
                    metadata: ["notification": .string("\(id)"), "until": .string(RFC3339.string(from: until))]
                )
                return Summary(status: .sending, busyUntil: until)
            }
            // Cancelled, finished, or gone: nothing to send.
            let status = try await store.notification(id: id)?.status ?? .failed
            return Summary(status: status)
        }
        guard
            let app = clients.apps.first(where: {
                $0.bundleID == notification.app && $0.serves(notification.environment)
            })
        else {
            return try await fail(
                id,
                reason: "\(notification.app) (\(notification.environment)) is no longer configured",
                at: now
            )
        }
        var resolving: (state: AudienceState, resolver: any AudienceResolver)?
        if notification.audienceResolvedAt == nil, let state = try await store.audienceState(id: id) {
            resolving = (state, resolver)
        }
        let client = try clients.client(for: app, environment: notification.environment)
        let pages = PendingPages(
            store: store,
            notification: notification,
            owner: owner,
            clock: clock,
            sendLease: sendLease,
            pageSize: pageSize,
            resolving: resolving
        )
        var summary = Summary(status: .sending)
        do {
            try await fanOut(
                pages,
                of: notification,
                owner: owner,
                client: client,
                isLastAttempt: isLastAttempt,
                summary: &summary
            )
        } catch {
            // Give the claim up at once (even when this task is cancelled), so that the next
            // attempt, here or on another instance, is not refused until it expires.
            _ = try? await withDatabaseCancellationIgnored { try await store.releaseSend(id, owner: owner) }
            throw error
        }

        let end = clock.now()
        if summary.retrying > 0 {
            // The next attempt, later, claims it again.
            try await store.releaseSend(id, owner: owner)
            return summary
        }
        let failed = try await store.counts(id: id)[.failed]
        let final: NotificationStatus = failed > 0 ? .failed : .done
        let reason = failed > 0 ? "\(failed) token(s) still failed after the last attempt" : nil
        _ = try await store.transition(id, from: [.sending], to: final, failureReason: reason, at: end)
        // Every token has its row now: the audience's stored pages are no longer needed.
        try await store.deletePages(of: id, on: store.database)
        summary.status = final
        logger.debug(
            "notification sent",
            metadata: [
                "notification": .string("\(id)"), "tokens": .int(summary.recorded.values.reduce(0, +)),
                "status": .string(final.rawValue),
            ]
        )
        return summary
    }

    /// Fails the notification and its tokens without a final result with `reason`.
    private func fail(_ id: UUID, reason: String, at now: Date) async throws -> Summary {
        _ = try await store.failUnfinished(id, reason: reason, at: now)
        _ = try await store.transition(id, from: [.sending], to: .failed, failureReason: reason, at: now)
        logger.warning("notification failed", metadata: ["notification": .string("\(id)"), "reason": .string(reason)])
        return Summary(status: .failed)
    }

    private func fanOut(
        _ pages: PendingPages,
        of notification: StoredNotification,
        owner: String,
        client: APNSClient,
        isLastAttempt: Bool,
        summary: inout Summary
    ) async throws {
        let payload = Array(notification.payload.utf8)
        let template = APNSRequest(
            deviceToken: "",
            pushType: notification.pushType,
            topic: .explicit(notification.topic),
            payload: payload,
            expiration: notification.expiration,
            priority: notification.priority,
            collapseID: notification.collapseID
        )
        // Every push shares the template's payload and headers: checked once, not per push.
        let scope = APNSRequest.ValidationScope(copiesOf: template)
        let writes = resultWrites(of: notification, owner: owner)
        let fanOut = APNSFanOut(maximumInFlight: maximumInFlight, clock: clock)
        let (clock, metrics) = (self.clock, self.metrics)
        var fanOutError: (any Error)?
        // Each push's task writes its result, and each batch written renews the claim; a renewal
        // of its own keeps it while nothing is written (APNs slow to answer). A write or a
        // renewal that finds the claim lost ends the pass with `ClaimLost`, cancelling what is in
        // flight.
        try await withThrowingTaskGroup(of: FanOutStep.self) { group in
            group.addTask {
                try await renewClaim(of: notification.id, owner: owner)
                return .renewed
            }
            group.addTask {
                var recorded: [DeliveryStatus: Int] = [:]
                // Pages are read one ahead while the pushes of the current one are sent: the
                // database's reads and the sends overlap. A page that cannot be read ends the
                // pass once the pushes in flight are answered and their results written, so that
                // the next attempt does not send them again.
                var reading: Task<PageRead, Never>? = Self.readAhead(pages)
                var page: [DeliveryResult] = []
                var position = 0
                var failure: (any Error)?
                do {
                    try await fanOut.run(
                        next: { () async throws -> Pending? in
                            while position == page.count {
                                guard let pending = reading else { return nil }
                                let read = await pending.value
                                reading = nil
                                if let error = read.error { throw error }
                                guard !read.rows.isEmpty else { return nil }
                                (page, position) = (read.rows, 0)
                                reading = Self.readAhead(read.pages)
                            }
                            let item = page[position]
                            position += 1
                            var request = template
                            request.deviceToken = item.token
                            request.id = APNSIdentifier.next()
                            return Pending(item: item, request: request)
                        },
                        send: { try await client.send($0.request, checking: scope) },
                        settle: { pending, answer -> DeliveryStatus? in
                            guard
                                let result = Self.result(
                                    of: pending,
                                    answer: answer,
                                    at: clock.now(),
                                    isLastAttempt: isLastAttempt
                                )
                            else { return nil }
                            metrics.tokens.increment(labels: [("result", result.status.rawValue)])
                            // Each push's task waits for the write of its result, in the batch of
                            // those answered with it: the push holds its slot until then, so
                            // while the database writes slower than APNs answers nothing new is
                            // sent, and memory stays bounded at any audience size.
                            try await writes.submit(result)
                            return result.status
                        }
                    ) { _, status in
                        if let status { recorded[status, default: 0] += 1 }
                    }
                } catch {
                    failure = error
                }
                if let reading {
                    reading.cancel()
                    _ = await reading.value
                }
                return .sent(recorded, failure)
            }
            for try await step in group {
                guard case .sent(let recorded, let sendFailure) = step else { continue }
                summary.recorded.merge(recorded, uniquingKeysWith: +)
                fanOutError = sendFailure
                // Every push is answered and its result written: the renewals stop.
                group.cancelAll()
            }
        }
        if Task.isCancelled { throw CancellationError() }
        if let fanOutError { throw fanOutError }
    }

    private enum FanOutStep: Sendable {
        case renewed
        case sent([DeliveryStatus: Int], (any Error)?)
    }

    /// A token's push, with the row its result updates.
    private struct Pending: Sendable {
        var item: DeliveryResult
        var request: APNSRequest
    }

    /// A page read ahead: its rows (empty: nothing is left, or the read failed with `error`) and
    /// where the reading stands after it.
    private struct PageRead: Sendable {
        var rows: [DeliveryResult]
        var pages: PendingPages
        var error: (any Error)?
    }

    /// Reads the page after `pages` while the current one is sent. A task of its own because the
    /// fan-out's source is a plain closure; the pass awaits it, or cancels and awaits it, before
    /// it returns, so no read outlives the pass.
    private static func readAhead(_ pages: PendingPages) -> Task<PageRead, Never> {
        Task {
            var pages = pages
            do {
                let rows = try await pages.next()
                return PageRead(rows: rows, pages: pages, error: nil)
            } catch {
                return PageRead(rows: [], pages: pages, error: error)
            }
        }
    }

    /// One token's result; `nil` when cancelled before APNs answered (the token stays unfinished).
    private static func result(
        of pending: Pending,
        answer: APNSPushAnswer,
        at now: Date,
        isLastAttempt: Bool
    ) -> DeliveryResult? {
        var result = pending.item
        result.reason = nil
        result.apnsID = nil
        result.invalidAt = nil
        switch answer.outcome {
        case .cancelled:
            return nil
        case .sent(let delivery):
            result.status = .sent
            result.apnsID = (delivery.apnsID ?? pending.request.id).uuidString.lowercased()
            result.attempts = delivery.attempts
        case .dead(let rejection, let since):
            result.status = .dead
            result.reason = rejection.reason.rawValue
            result.apnsID = rejection.response.apnsID?.uuidString.lowercased()
            result.attempts = rejection.attempts
            result.invalidAt = since
        case .retry(let failure):
            result.status = isLastAttempt ? .failed : .retrying
            result.record(failure)
        case .rejected(let failure):
            result.status = .rejected
            result.record(failure)
        }
        result.updatedAt = now
        return result
    }
}

extension DeliveryResult {
    /// The reason, APNs' id and the attempts of a push that was not sent.
    fileprivate mutating func record(_ failure: APNSPushFailure) {
        reason = failure.rejection == nil ? String(failure.reason.prefix(300)) : failure.reason
        apnsID = failure.rejection?.response.apnsID?.uuidString.lowercased()
        attempts = failure.attempts
    }
}
