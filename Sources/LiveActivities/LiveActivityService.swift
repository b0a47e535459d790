public import APNs
import APNsTransport
public import Foundation
public import HeraldCore
import HeraldCrypto
import Jobs
import Storage

/// What the Live Activities routes call: creating, reading, listing and cancelling activities,
/// accepting updates and ends, registering push-to-start tokens and instances. Sending is the
/// jobs' (``LiveActivityJobs``).
///
/// ```swift
/// let service = LiveActivityService(jobs: jobs)
/// let (activity, created) = try await service.create(try LiveActivityInput.parseCreate(body, now: Date()))
/// let routes = try await service.update(activity.id, update)
/// ```
public struct LiveActivityService: Sendable {
    public let jobs: LiveActivityJobs
    /// What one user may hold: instances per activity, push-to-start tokens.
    public let quotas: LiveActivityQuotas
    /// Told of each activity created, in the creating transaction (boards).
    public var creationHook: (any LiveActivityCreationHook)?
    public var store: LiveActivityStore { jobs.store }
    var clock: any HeraldClock { jobs.clock }

    public init(jobs: LiveActivityJobs, quotas: LiveActivityQuotas = LiveActivityQuotas()) {
        self.jobs = jobs
        self.quotas = quotas
    }

    /// The time on the service's clock, the `now` a request is parsed against (it bounds `start_at`).
    public func now() -> Date {
        clock.now()
    }

    /// The app and environment a request means, as `/v1/notifications` resolves them.
    public func resolve(
        app: String?,
        environment: APNSEnvironment?
    ) throws(LiveActivityError) -> (APNSAppConfiguration, APNSEnvironment) {
        do {
            return try APNSAppConfiguration.resolve(in: jobs.clients.apps, app: app, environment: environment)
        } catch {
            throw LiveActivityError(error)
        }
    }

    // MARK: Activities

    /// Creates an activity and commits its start job (due at `start_at`, or now); with an id
    /// that exists, returns that activity when the body is the same, and refuses otherwise.
    ///
    /// - Returns: the activity and whether this call created it.
    /// - Throws: ``LiveActivityError``: conflict for an id taken by another body, unprocessable
    ///   when the audience has no push-to-start token, unavailable when the channel cannot be made.
    public func create(_ input: LiveActivityRequest) async throws -> (LiveActivity, created: Bool) {
        let (app, environment) = try resolve(app: input.app, environment: input.environment)
        var request = input
        request.app = app.bundleID
        request.environment = environment
        let hash = SHA256.hash(Array(try LiveActivityStore.json(request).utf8)).map { String(format: "%02x", $0) }
            .joined()
        let id = input.id ?? ResourceIdentifier.next()
        if let existing = try await store.activity(id) { return (try same(existing, hash), false) }
        let now = clock.now()
        var activity = LiveActivity(
            id: id,
            app: app.bundleID,
            environment: environment,
            attributesType: request.attributesType,
            request: request,
            requestHash: hash,
            state: .scheduled,
            failureReason: nil,
            channelID: nil,
            channelCreated: false,
            contentState: request.contentState,
            lastUpdate: nil,
            lastTimestamp: 0,
            startAt: request.startAt.map { Date(timeIntervalSince1970: TimeInterval($0)) },
            endAt: request.endAt.map { Date(timeIntervalSince1970: TimeInterval($0)) },
            startedAt: nil,
            endedAt: nil,
            createdAt: now,
            updatedAt: now,
            users: request.users
        )
        if request.startsInApp {
            // Running from now: the app starts it on the devices, and its users report instances.
            activity.state = .started
            activity.startedAt = now
            activity.users = try await appStartUsers(request.audience, app: app, environment: environment)
        } else if try await jobs.lifecycle.pushToStartTokens(activity).tokens.isEmpty {
            throw LiveActivityError(
                .unprocessable,
                code: "no_push_to_start_token",
                message: "the audience has no push-to-start token for \(request.attributesType) in \(app.bundleID) "
                    + "(\(environment.rawValue)): the app must send its pushToStartTokenUpdates to "
                    + "PUT /v1/client/push-to-start-tokens first",
                field: "audience"
            )
        }
        switch request.channel {
        case .existing(let channel):
            activity.channelID = channel
        case .create(let policy):
            do {
                activity.channelID = try await jobs.channels.create(
                    app: app,
                    environment: environment,
                    storagePolicy: APNSChannelMessageStoragePolicy(rawValue: policy) ?? .noMessageStored
                ).rawValue
                activity.channelCreated = true
            } catch {
                throw LiveActivityError(
                    .unavailable,
                    code: "channel_not_created",
                    message: "APNs did not create the broadcast channel (\(error)): check that the app has the "
                        + "Broadcast capability, or retry",
                    field: "channel"
                )
            }
        case nil:
            break
        }
        let queue = try jobs.lifecycle.queue
        let created = activity
        let inserted: Bool
        do {
            inserted = try await store.database.transaction { tx in
                guard try await self.store.insert(created, on: tx) else { return false }
                try await self.creationHook?.created(created, on: tx, queue: queue)
                if created.request.startsInApp {
                    try await LiveActivityLifecycle.enqueueRunning(created, startedAt: now, on: queue, tx)
                    try await self.jobs.lifecycle.report([LiveActivityEvent(.started, created, at: now)], on: tx)
                } else {
                    _ = try await queue.enqueue(
                        LiveActivityJob(id: id).newJob(LiveActivityJobKind.start, at: created.startAt),
                        on: tx
                    )
                }
                return true
            }
        } catch {
            // Nothing stored, so nothing would ever delete the channel made for it: try now.
            if activity.channelCreated, let channel = activity.channelID {
                do {
                    try await jobs.channels.delete(
                        app: app,
                        environment: environment,
                        channelID: APNSChannelID(rawValue: channel)
                    )
                } catch let deletion {
                    jobs.parts.logger.warning(
                        "a broadcast channel made for a Live Activity that was not stored could not be deleted",
                        metadata: ["channel_id": .string(channel), "error": .string("\(deletion)")]
                    )
                }
            }
            throw error
        }
        if inserted {
            queue.wake()
            if activity.request.startsInApp { jobs.lifecycle.eventsCommitted() }
            return (activity, true)
        }
        if activity.channelCreated, let channel = activity.channelID {
            // The channel made for this call has no activity: the one that won keeps its own.
            var deletion = try LiveActivityJob(id: id, channel: channel).newJob(LiveActivityJobKind.deleteChannel)
            deletion.uniqueKey = nil
            _ = try await queue.enqueue(deletion)
            queue.wake()
        }
        // Another request with the same id won the race.
        guard let existing = try await store.activity(id) else { throw LiveActivityError.notFound }
        return (try same(existing, hash), false)
    }

    /// The users of an activity the app starts: the audience's users, or the users of the
    /// registered devices its tags (or `all`) select; 422 when that is nobody, since only its
    /// users may report its instances.
    private func appStartUsers(
        _ audience: LiveActivityAudience,
        app: APNSAppConfiguration,
        environment: APNSEnvironment
    ) async throws -> [String] {
        let directory = jobs.lifecycle.parts.users
        let users: [String]
        switch audience {
        case .users(let list): users = list
        case .anyTag(let tags):
            users = try await directory.users(app: app.bundleID, environment: environment, matching: .anyTag(tags))
        case .allTags(let tags):
            users = try await directory.users(app: app.bundleID, environment: environment, matching: .allTags(tags))
        case .all: users = try await directory.users(app: app.bundleID, environment: environment, matching: .all)
        case .tokens: users = []  // refused when the body was read
        }
        guard !users.isEmpty else {
            throw LiveActivityError(
                .unprocessable,
                code: "no_users",
                message:
                    "the audience selects no user of \(app.bundleID) (\(environment.rawValue)): an activity the app "
                    + "starts is reported by its users, so register their devices with a user_id first",
                field: "audience"
            )
        }
        return Array(Set(users)).sorted()
    }

    private func same(_ existing: LiveActivity, _ hash: String) throws(LiveActivityError) -> LiveActivity {
        guard existing.requestHash == hash else {
            throw LiveActivityError(
                .conflict,
                code: "id_conflict",
                message: "a Live Activity with this id exists with another body: send the same body to get it, "
                    + "or pick another id",
                field: "id"
            )
        }
        return existing
    }

    /// The activity, its instances and its latest deliveries.
    public func details(
        _ id: UUID
    ) async throws -> (LiveActivity, [LiveActivityInstance], [LiveActivityDelivery]) {
        guard let activity = try await store.activity(id) else { throw LiveActivityError.notFound }
        return (activity, try await store.instances(of: id), try await store.deliveries(of: id))
    }

    /// Activities newest first, `limit` at a time, from the cursor of the previous page
    /// (``LiveActivityStore/list(_:limit:cursor:)``).
    public func list(
        _ filter: LiveActivityStore.Filter,
        limit: Int,
        cursor: String?
    ) async throws -> (items: [LiveActivity], next: String?) {
        try await store.list(filter, limit: limit, cursor: cursor)
    }

    /// Cancels a scheduled activity; its start job then sends nothing.
    ///
    /// - Throws: ``LiveActivityError`` not found, or conflict once it started.
    public func cancel(_ id: UUID) async throws -> LiveActivity {
        let now = clock.now()
        let queue = try jobs.lifecycle.queue
        defer { queue.wake() }
        return try await store.database.transaction { tx in
            guard let activity = try await self.store.lockedActivity(id, on: tx) else {
                throw LiveActivityError.notFound
            }
            guard try await self.store.cancel(id, at: now, on: tx) else {
                if activity.state == .scheduled {
                    throw LiveActivityError(
                        .conflict,
                        code: "starting",
                        message: "the push-to-start of this activity is being sent: once it is started, end it "
                            + "with POST /v1/live-activities/{id}/end"
                    )
                }
                throw LiveActivityError(
                    .conflict,
                    code: "not_scheduled",
                    message: "the activity is \(activity.state.rawValue): only a scheduled one can be cancelled; "
                        + "end a started one with POST /v1/live-activities/{id}/end"
                )
            }
            if let deletion = try LiveActivityLifecycle.channelDeletion(of: activity, at: now) {
                _ = try await queue.enqueue(deletion, on: tx)
            }
            var cancelled = activity
            cancelled.state = .cancelled
            return cancelled
        }
    }

    /// Accepts an update (``LiveActivityAcceptor/accept(_:for:keepContent:)``).
    public func update(_ id: UUID, _ update: LiveActivityUpdate) async throws -> LiveActivityRouteCounts {
        try await jobs.acceptor.accept(update, for: id)
    }

    /// Accepts an end; without content it ends with the latest content.
    public func end(_ id: UUID, _ update: LiveActivityUpdate, hasContent: Bool) async throws -> LiveActivityRouteCounts
    {
        var end = update
        end.event = .end
        return try await jobs.acceptor.accept(end, for: id, keepContent: !hasContent)
    }

    // MARK: App-facing

    /// Registers a push-to-start token for `userID`, stamped now; past the user's quota the least
    /// recently registered of the user's others is evicted
    /// (``LiveActivityStore/register(_:maximumPerUser:)``).
    public func register(
        _ input: LiveActivityInput.PushToStart,
        userID: String
    ) async throws -> (PushToStartToken, created: Bool) {
        let (app, environment) = try resolve(app: input.app, environment: input.environment)
        return try await store.register(
            PushToStartRegistration(
                app: app.bundleID,
                environment: environment,
                attributesType: input.attributesType,
                token: input.token,
                userID: userID,
                registeredAt: clock.now()
            ),
            maximumPerUser: quotas.maximumPushToStartTokensPerUser
        )
    }

    /// An activity as one of its users reads it (a widget, an App Intent): unknown to anyone
    /// else, exactly as an id that does not exist.
    ///
    /// - Parameter permitted: the client token's `app` claim, if any: an activity of another app is unknown.
    public func read(_ id: UUID, userID: String, app permitted: String?) async throws -> LiveActivity {
        guard let activity = try await store.activity(id), permitted == nil || permitted == activity.app,
            try await store.isUser(userID, of: id, on: store.database)
        else { throw LiveActivityError.notFound }
        return activity
    }

    /// The scheduled and started activities of a user, running ones first, then by start time.
    public func upcoming(userID: String, app permitted: String?) async throws -> [LiveActivity] {
        try await store.upcoming(userID: userID, app: permitted)
    }

    /// Registers (or updates) where an activity runs. A new instance of an activity that has had
    /// an update or end receives the latest at once (along its own route), and so does one first
    /// reported without any token once a report brings one.
    ///
    /// Only a user of the activity may report one: a user of its `users` audience (known at
    /// creation), or one whose push-to-start token the start job sent it to (known before the
    /// push-to-starts leave). To anyone else the activity does not exist. An instance belongs to
    /// the user who reported it first, and one user may report at most
    /// ``LiveActivityQuotas/maximumInstancesPerUser`` of one activity.
    ///
    /// - Parameters:
    ///   - userID: the client token's `sub`, or the backend's `user_id`.
    ///   - permitted: the client token's `app` claim, if any: an activity of another app is unknown.
    /// - Throws: ``LiveActivityError`` not found (no such activity, or not a user of it),
    ///   forbidden `not_your_instance` (another user's instance), conflict `too_many_instances`.
    public func register(
        _ input: LiveActivityInput.Instance,
        for id: UUID,
        userID: String,
        app permitted: String?
    ) async throws -> (LiveActivityInstance, created: Bool) {
        let queue = try jobs.lifecycle.queue
        let now = clock.now()
        let result = try await store.database.transaction { tx -> (LiveActivityInstance, Bool) in
            guard let activity = try await self.store.lockedActivity(id, on: tx) else {
                throw LiveActivityError.notFound
            }
            if let permitted, permitted != activity.app { throw LiveActivityError.notFound }
            guard try await self.store.isUser(userID, of: id, on: tx) else { throw LiveActivityError.notFound }
            let (instance, created, gainedRoute) = try await self.store.upsert(
                LiveActivityInstance(
                    liveActivityID: id,
                    activityID: input.activityID,
                    userID: userID,
                    deviceToken: input.deviceToken,
                    updateToken: input.updateToken,
                    state: input.state,
                    unreachable: false,
                    createdAt: now,
                    updatedAt: now
                ),
                registeredAfter: activity.lastTimestamp,
                maximumPerUser: self.quotas.maximumInstancesPerUser,
                on: tx
            )
            // A new instance, or one first reported without a token that now brings one, gets the
            // latest update (the sender skips an instance that received it already).
            if created || gainedRoute, instance.state == .active, let latest = activity.lastUpdate,
                activity.state == .started || activity.state == .ended, activity.channelID == nil
            {
                _ = try await queue.enqueue(
                    contentsOf: try LiveActivitySendJob.jobs([
                        LiveActivitySend(id: id, update: latest, instance: instance.activityID)
                    ]),
                    on: tx
                )
            }
            return (instance, created)
        }
        queue.wake()
        return result
    }
}
