import APNs
import APNsTransport
import Foundation
import HTTPRouting
import HeraldCore
import HeraldFeature
import Notifications
import Synchronization

/// The handlers of `/v1/channels` (``Channels``) over the APNs clients: each call goes to APNs at
/// once and answers what it answered.
struct ChannelRoutes: Sendable {
    let clients: APNSClientProvider
    private let timestamps: BroadcastTimestamps

    /// The largest request body: a broadcast's payload is at most 5120 bytes.
    static let maximumBodyBytes = 16 * 1024

    init(clients: APNSClientProvider, clock: any HeraldClock = SystemClock()) {
        self.clients = clients
        self.timestamps = BroadcastTimestamps(clock: clock)
    }

    /// The five routes, behind an API key; `POST /v1/channels` takes `Idempotency-Key`.
    var routes: [FeatureRoute] {
        let routes = self
        var group = RouteGroup("/v1/channels", authentication: .apiKey, maxBodySize: Self.maximumBodyBytes)
        let target = ["app", "environment"]
        group.post("", idempotent: true) { request in try await routes.answering { try await routes.create(request) } }
        group.describe("POST", "", Self.createOperation)
        group.get("", query: target + Paging.parameters) { request in
            try await routes.answering { try await routes.list(request) }
        }
        group.describe("GET", "", Self.listOperation)
        group.get("/{id}", query: target) { request in try await routes.answering { try await routes.read(request) } }
        group.describe("GET", "/{id}", Self.readOperation)
        group.delete("/{id}", query: target) { request in
            try await routes.answering { try await routes.delete(request) }
        }
        group.describe("DELETE", "/{id}", Self.deleteOperation)
        group.post("/{id}/broadcast") { request in
            try await routes.answering { try await routes.broadcast(request) }
        }
        group.describe("POST", "/{id}/broadcast", Self.broadcastOperation)
        return group.routes
    }

    /// Runs `body`, answering what APNs' side threw (the client, the pool) as a ``ChannelError``;
    /// refusals and HTTP errors pass as they are.
    private func answering(_ body: () async throws -> HTTPResponse) async throws -> HTTPResponse {
        do {
            return try await body()
        } catch let error as any DomainErrorResponse {
            throw error
        } catch let error as HTTPError {
            throw error
        } catch {
            throw ChannelError.apns(error)
        }
    }

    // MARK: Handlers

    func create(_ request: HTTPRequest) async throws -> HTTPResponse {
        let input = try ChannelInput.create(request.body)
        let (app, environment) = try clients.resolve(app: input.app, environment: input.environment)
        let client = try clients.managementClient(for: app, environment: environment)
        let id = try await client.createChannel(bundleID: app.bundleID, storagePolicy: input.storagePolicy)
        let body = ChannelBody(
            id: id.rawValue,
            app: app.bundleID,
            environment: environment.rawValue,
            storagePolicy: input.storagePolicy.rawValue
        )
        var response = HTTPResponse.json(body, status: 201)
        response.headers.replaceOrAdd(name: "Location", value: "/v1/channels/" + Self.pathSegment(id.rawValue))
        return response
    }

    func list(_ request: HTTPRequest) async throws -> HTTPResponse {
        let (app, environment) = try target(request)
        let limit = try request.pageLimit()
        let cursor = request.queryValue("cursor")
        if let cursor, cursor.isEmpty || cursor.utf8.count > 256 { throw Paging.invalidCursor() }
        let client = try clients.managementClient(for: app, environment: environment)
        // APNs answers every id at once; the list pages them as every list pages, in id order.
        let ids = try await client.allChannels(bundleID: app.bundleID).map(\.rawValue).sorted()
        let after = cursor.map { cursor in ids.filter { $0 > cursor } } ?? ids
        let page = after.prefix(limit)
        return .json(
            ChannelListBody(
                app: app.bundleID,
                environment: environment.rawValue,
                channels: page.map { ChannelListBody.Item(id: $0) },
                nextCursor: after.count > limit ? page.last : nil
            )
        )
    }

    func read(_ request: HTTPRequest) async throws -> HTTPResponse {
        let id = try ChannelInput.channelID(request)
        let (app, environment) = try target(request)
        let client = try clients.managementClient(for: app, environment: environment)
        let configuration = try await client.channelConfiguration(bundleID: app.bundleID, channelID: id)
        return .json(
            ChannelBody(
                id: id.rawValue,
                app: app.bundleID,
                environment: environment.rawValue,
                storagePolicy: configuration.storagePolicy.rawValue
            )
        )
    }

    func delete(_ request: HTTPRequest) async throws -> HTTPResponse {
        let id = try ChannelInput.channelID(request)
        let (app, environment) = try target(request)
        let client = try clients.managementClient(for: app, environment: environment)
        try await client.deleteChannel(bundleID: app.bundleID, channelID: id)
        timestamps.forget(app: app.bundleID, channel: id.rawValue)
        return HTTPResponse(status: 204)
    }

    func broadcast(_ request: HTTPRequest) async throws -> HTTPResponse {
        let id = try ChannelInput.channelID(request)
        let input = try ChannelInput.broadcast(request.body)
        let (app, environment) = try clients.resolve(app: input.app, environment: input.environment)
        let client = try clients.client(for: app, environment: environment)
        let timestamp = timestamps.next(app: app.bundleID, channel: id.rawValue, requested: input.timestamp)
        let payload = APNSLiveActivityPayload(
            event: input.event,
            timestamp: timestamp,
            contentState: input.contentState,
            alert: input.alert,
            staleDate: input.staleDate,
            dismissalDate: input.dismissalDate,
            relevanceScore: input.relevanceScore
        )
        // The policy only decides which expirations the client accepts: none (0) suits both; a
        // later time needs a channel that stores messages, which APNs checks for itself.
        let policy: APNSChannelMessageStoragePolicy =
            input.expiration == .immediately ? .noMessageStored : .mostRecentMessageStored
        let broadcast = try APNSBroadcastRequest(
            bundleID: app.bundleID,
            channelID: id,
            storagePolicy: policy,
            payload: payload,
            expiration: input.expiration,
            priority: input.priority
        )
        switch try await client.send(broadcast) {
        case .delivered(let delivery):
            return .json(
                BroadcastBody(
                    apnsRequestID: delivery.requestID?.uuidString.lowercased(),
                    apnsUniqueID: delivery.uniqueID,
                    timestamp: Int64(timestamp.timeIntervalSince1970)
                )
            )
        case .rejected(let rejection):
            throw ChannelError.apns(rejection)
        }
    }

    // MARK: Helpers

    /// The app and environment of the query (`app`, `environment`), resolved.
    private func target(_ request: HTTPRequest) throws -> (APNSAppConfiguration, APNSEnvironment) {
        let app = try ChannelInput.app(request)
        let environment = try ChannelInput.environment(request.queryValue("environment"), field: "environment")
        return try clients.resolve(app: app, environment: environment)
    }

    /// `id` percent-encoded for a path (base64's `+`, `/` and `=`).
    static func pathSegment(_ id: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return id.addingPercentEncoding(withAllowedCharacters: allowed) ?? id
    }
}

/// Broadcast timestamps that increase per channel: iOS ignores an update whose `timestamp` is not
/// newer than the last one, and two broadcasts within one second would share it.
final class BroadcastTimestamps: Sendable {
    private let clock: any HeraldClock
    private let last = Mutex<[String: Int64]>([:])
    /// Channels remembered; past it, those whose last timestamp the clock has passed are dropped.
    static let capacity = 10_000

    init(clock: any HeraldClock) {
        self.clock = clock
    }

    /// `requested` when given (iOS orders by it; the caller chose it), else now in whole seconds,
    /// or one second after the channel's last when now is not later.
    func next(app: String, channel: String, requested: Date?) -> Date {
        let now = Int64(clock.now().timeIntervalSince1970.rounded(.down))
        let key = app + " " + channel
        let seconds = last.withLock { last in
            var seconds = requested.map { Int64($0.timeIntervalSince1970.rounded(.down)) } ?? now
            if requested == nil, let previous = last[key], previous >= seconds { seconds = previous + 1 }
            if last.count >= Self.capacity { last = last.filter { $0.value > now } }
            last[key] = max(seconds, last[key] ?? seconds)
            return seconds
        }
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    func forget(app: String, channel: String) {
        _ = last.withLock { $0.removeValue(forKey: app + " " + channel) }
    }
}

// MARK: JSON bodies

struct ChannelBody: Encodable, Sendable {
    var id: String
    var app: String
    var environment: String
    var storagePolicy: Int

    enum CodingKeys: String, CodingKey {
        case id, app, environment
        case storagePolicy = "storage_policy"
    }
}

struct ChannelListBody: Encodable, Sendable {
    struct Item: Encodable, Sendable {
        var id: String
    }

    var app: String
    var environment: String
    var channels: [Item]
    var nextCursor: String?

    enum CodingKeys: String, CodingKey {
        case app, environment, channels
        case nextCursor = "next_cursor"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(app, forKey: .app)
        try container.encode(environment, forKey: .environment)
        try container.encode(channels, forKey: .channels)
        try container.encode(nextCursor, forKey: .nextCursor)
    }
}

struct BroadcastBody: Encodable, Sendable {
    var apnsRequestID: String?
    var apnsUniqueID: String?
    /// The `timestamp` sent, seconds since 1970.
    var timestamp: Int64

    enum CodingKeys: String, CodingKey {
        case timestamp
        case apnsRequestID = "apns_request_id"
        case apnsUniqueID = "apns_unique_id"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(apnsRequestID, forKey: .apnsRequestID)
        try container.encode(apnsUniqueID, forKey: .apnsUniqueID)
        try container.encode(timestamp, forKey: .timestamp)
    }
}
