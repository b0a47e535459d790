import APNs
import APNsTransport
import Foundation
import HeraldCore
import Jobs
import Storage

/// The jobs of an activity's life other than its updates: the push-to-start at `start_at`, the
/// end at `end_at`, the 8-hour expiry and the deletion of the channel Herald created. Sends through
/// the one fan-out (``APNSFanOut``) and records deliveries as ``LiveActivitySender`` does; a
/// scheduled end is accepted as any end is, by ``LiveActivityAcceptor``.
struct LiveActivityLifecycle: LiveActivityPart {
    let parts: LiveActivityParts
    let sender: LiveActivitySender
    let acceptor: LiveActivityAcceptor

    // MARK: Start

    /// Sends the push-to-start to every token of the audience; `started` when APNs accepted at
    /// least one, `failed` when it accepted none and no retry can help. The deliveries, the new
    /// state and the follow-up jobs are one transaction.
    ///
    /// When APNs took some tokens and not others (429, 5xx, no connection), the activity is
    /// started and a job of the same kind sends to the others again after the kind's backoff, with
    /// the attempts this one has left (`tokens` in the payload); such a job sends the latest
    /// content and does nothing once the activity is no longer running. When APNs took none and a
    /// retry can help, the job itself retries; after its last attempt the activity is `failed`.
    func start(_ job: LiveActivityJob, attempt: Int, options: JobKindOptions) async throws -> JobOutcome {
        let id = job.id
        guard let activity = try await store.activity(id) else { return .failed(reason: "no such activity") }
        guard activity.state == (job.tokens == nil ? .scheduled : .started) else { return .done }
        let app = try app(activity)
        let targets: (tokens: [String], users: [String])
        if let tokens = job.tokens { targets = (tokens, []) } else { targets = try await pushToStartTokens(activity) }
        guard !targets.tokens.isEmpty else {
            let queue = try queue
            let deletion = try Self.channelDeletion(of: activity, at: clock.now())
            let reason = "no push-to-start token: the audience has none for \(activity.attributesType)"
            try await store.database.transaction { tx in
                let now = self.clock.now()
                guard
                    try await self.store.transition(
                        id,
                        from: [.scheduled],
                        to: .failed,
                        at: now,
                        reason: reason,
                        on: tx
                    )
                else { return }
                if let deletion { _ = try await queue.enqueue(deletion, on: tx) }
                try await self.report([LiveActivityEvent(.failed(reason: reason), activity, at: now)], on: tx)
            }
            queue.wake()
            eventsCommitted()
            return .done
        }
        // From here the activity may show on devices: a cancel would leave it there with no way to
        // end it, so cancels are refused until the job is done (or finds APNs took none).
        // The users the push-to-starts go to are recorded before any leaves: a device that
        // received one may report its instance at once.
        let timestamp = try await store.database.transaction { tx -> Int64? in
            if job.tokens == nil {
                guard try await self.store.markStarting(id, true, on: tx) else { return nil }
                try await self.store.addUsers(ofPushToStartTokens: targets.tokens, of: activity, on: tx)
            }
            return try await self.store.stampStart(id, now: self.clock.now(), on: tx)
        }
        guard let timestamp else { return .done }
        let request = activity.request
        let payload = try APNSLiveActivityPayload.start(
            attributesType: activity.attributesType,
            attributes: request.attributesSent(id: id),
            contentState: job.tokens == nil ? request.contentState : activity.contentState,
            alert: request.alert.apns,
            timestamp: Date(timeIntervalSince1970: TimeInterval(timestamp)),
            staleDate: request.staleDate.map { Date(timeIntervalSince1970: TimeInterval($0)) },
            relevanceScore: request.relevanceScore,
            inputPushToken: request.requestUpdateToken && activity.channelID == nil,
            inputPushChannel: activity.channelID
        ).encodedPayload()
        let client = try clients.client(for: app, environment: activity.environment)
        let answers = try await parts.fanOut.send(
            targets.tokens.map { token in
                APNSRequest(
                    deviceToken: token,
                    pushType: .liveActivity,
                    topic: .bundleID(app.bundleID),
                    payload: payload,
                    priority: .immediately
                )
            }
        ) { try await client.send($0) }
        var accepted = 0
        var again: [String] = []
        var deliveries: [LiveActivityDelivery] = []
        for (token, answer) in zip(targets.tokens, answers) {
            let delivery = sender.record(answer, event: "start", route: .pushToStart, token: token)
            deliveries.append(delivery)
            switch answer.outcome {
            case .sent: accepted += 1
            case .retry, .cancelled: again.append(token)
            case .dead(_, let at):
                try await store.invalidatePushToStart(
                    app: activity.app,
                    environment: activity.environment,
                    attributesType: activity.attributesType,
                    token: token,
                    reason: delivery.reason ?? "Unregistered",
                    at: at,
                    now: clock.now()
                )
            case .rejected: break
            }
        }
        if accepted == 0, !again.isEmpty, attempt < options.maxAttempts {
            let written = deliveries
            try await store.database.transaction { tx in
                try await self.store.insert(written.map { (id, $0) }, on: tx)
                if job.tokens == nil { _ = try await self.store.markStarting(id, false, on: tx) }
            }
            return .retry(reason: "APNs did not accept the push-to-start yet")
        }
        // The tokens APNs did not take yet, in a job of their own: due after the kind's backoff,
        // with the attempts this one has left.
        var rest: NewJob?
        if !again.isEmpty, attempt < options.maxAttempts {
            let delay = options.retryDelay(afterAttempt: attempt, jitter: Double.random(in: 0.5...1))
            var next = try LiveActivityJob(id: id, tokens: again, round: (job.round ?? 0) + 1).newJob(
                LiveActivityJobKind.start,
                at: clock.now().addingTimeInterval(delay)
            )
            next.maxAttempts = max(1, options.maxAttempts - attempt)
            rest = next
        }
        let queue = try queue
        let now = clock.now()
        let (written, followUp, anyAccepted, gaveUp) = (deliveries, rest, accepted > 0, !again.isEmpty)
        let deletion = accepted == 0 && job.tokens == nil ? try Self.channelDeletion(of: activity, at: now) : nil
        try await store.database.transaction { tx in
            try await self.store.insert(written.map { (id, $0) }, on: tx)
            if let followUp { _ = try await queue.enqueue(followUp, on: tx) }
            guard job.tokens == nil else { return }
            guard anyAccepted else {
                let reason =
                    !gaveUp ? "APNs accepted no push-to-start" : "APNs accepted no push-to-start in \(attempt) attempts"
                guard
                    try await self.store.transition(
                        id,
                        from: [.scheduled],
                        to: .failed,
                        at: now,
                        reason: reason,
                        on: tx
                    )
                else { return }
                if let deletion { _ = try await queue.enqueue(deletion, on: tx) }
                try await self.report([LiveActivityEvent(.failed(reason: reason), activity, at: now)], on: tx)
                return
            }
            guard try await self.store.transition(id, from: [.scheduled], to: .started, at: now, on: tx) else { return }
            try await Self.enqueueRunning(activity, startedAt: now, on: queue, tx)
            try await self.report([LiveActivityEvent(.started, activity, at: now)], on: tx)
        }
        queue.wake()
        eventsCommitted()
        return .done
    }

    /// The jobs of a running activity, in the transaction that starts it (a push start accepted,
    /// or the creation of an activity the app starts): its expiry 8 hours on, and its `end_at`.
    static func enqueueRunning(
        _ activity: LiveActivity,
        startedAt: Date,
        on queue: JobQueue,
        _ tx: any DatabaseExecutor
    ) async throws {
        _ = try await queue.enqueue(
            LiveActivityJob(id: activity.id).newJob(
                LiveActivityJobKind.expire,
                at: startedAt.addingTimeInterval(LiveActivityLimits.maximumActivityDuration)
            ),
            on: tx
        )
        if let end = activity.request.endAt {
            _ = try await queue.enqueue(
                LiveActivityJob(id: activity.id).newJob(
                    LiveActivityJobKind.scheduledEnd,
                    at: Date(timeIntervalSince1970: TimeInterval(end))
                ),
                on: tx
            )
        }
    }

    /// The audience's push-to-start tokens and the users they belong to.
    func pushToStartTokens(_ activity: LiveActivity) async throws -> (tokens: [String], users: [String]) {
        let (app, environment, type) = (activity.app, activity.environment, activity.attributesType)
        let users: [String]
        switch activity.request.audience {
        case .tokens(let tokens):
            let live = try await store.livePushToStartTokens(
                app: app,
                environment: environment,
                attributesType: type,
                tokens: tokens
            )
            return (live, [])
        case .users(let list): users = list
        case .anyTag(let tags):
            users = try await parts.users.users(app: app, environment: environment, matching: .anyTag(tags))
        case .allTags(let tags):
            users = try await parts.users.users(app: app, environment: environment, matching: .allTags(tags))
        case .all: users = try await parts.users.users(app: app, environment: environment, matching: .all)
        }
        let found = try await store.pushToStartTokens(
            app: app,
            environment: environment,
            attributesType: type,
            users: users
        )
        return (found.map(\.token), Array(Set(found.map(\.userID))).sorted())
    }

    // MARK: End, expiry, channel

    /// `end_at` came: ends the activity with its latest content, unless it ended already.
    func scheduledEnd(_ id: UUID) async throws -> JobOutcome {
        guard let activity = try await store.activity(id) else { return .done }
        guard activity.state == .started else { return .done }
        let update = LiveActivityUpdate(event: .end, contentState: activity.contentState)
        _ = try await acceptor.accept(update, for: id, reason: .endAt)
        return .done
    }

    /// 8 hours after the start: iOS has ended the activity, so Herald marks it `expired`.
    func expire(_ id: UUID) async throws -> JobOutcome {
        let queue = try queue
        let now = clock.now()
        let retention = channelRetention
        try await store.database.transaction { tx in
            guard try await self.store.transition(id, from: [.started], to: .expired, at: now, on: tx),
                let activity = try await self.store.activity(id, on: tx)
            else { return }
            try await self.report([LiveActivityEvent(.ended(.expired), activity, at: now)], on: tx)
            guard activity.channelCreated else { return }
            _ = try await queue.enqueue(
                LiveActivityJob(id: id).newJob(
                    LiveActivityJobKind.deleteChannel,
                    at: now.addingTimeInterval(retention)
                ),
                on: tx
            )
        }
        queue.wake()
        eventsCommitted()
        return .done
    }

    /// Deletes the channel Herald created for an activity that ended, was cancelled or failed (or
    /// the one in the payload, made for a create that lost the race to the insert).
    func deleteChannel(_ job: LiveActivityJob) async throws -> JobOutcome {
        guard let activity = try await store.activity(job.id),
            let channel = job.channel ?? (activity.channelCreated ? activity.channelID : nil)
        else { return .done }
        do {
            try await channels.delete(
                app: try app(activity),
                environment: activity.environment,
                channelID: APNSChannelID(rawValue: channel)
            )
        } catch let rejection as APNSRejection where rejection.category == .channelInvalid {
            return .done
        }
        return .done
    }

    /// The deletion, due at once, of the channel Herald created for an activity that will never
    /// run (cancelled, or failed: no device ever subscribed to it); `nil` without such a channel.
    static func channelDeletion(of activity: LiveActivity, at now: Date) throws -> NewJob? {
        guard activity.channelCreated, activity.channelID != nil else { return nil }
        return try LiveActivityJob(id: activity.id).newJob(LiveActivityJobKind.deleteChannel, at: now)
    }
}
