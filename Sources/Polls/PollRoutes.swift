import ClientTokens
import Foundation
import HTTPRouting
import HeraldCore
public import HeraldFeature

/// The Polls routes:
///
/// - `POST /v1/polls` (API key) → 201 with the poll; `live_activity` starts its activity.
/// - `GET /v1/polls?limit=&cursor=` (API key) → newest first, `{"polls", "next_cursor"}`.
/// - `GET /v1/polls/{id}` (API key) → the poll with its tally and names.
/// - `POST /v1/polls/{id}/finalize` (API key, or the host's client token) → 200 with the final
///   poll as each caller reads it elsewhere: the whole poll for the key, the member's tally for the
///   host; 409 `poll_final`; 403 `not_host` for another member; 404 for anyone else.
/// - `POST /v1/client/polls/{id}/votes` (a member's client token) `{"option"}` → 200 with the
///   tally; 409 `poll_final`; 404 for a non-member or another app's poll, as for an unknown id.
/// - `GET /v1/client/polls/{id}` (a member's client token) → the tally, `ETag`, 304.
public struct PollRoutes: Sendable {
    public let service: PollService

    public init(service: PollService) {
        self.service = service
    }

    public var routes: [FeatureRoute] {
        let service = service
        var polls = RouteGroup("/v1/polls", authentication: .apiKey, maxBodySize: PollLimits.maximumBodyBytes)
        polls.post("", maxBodySize: PollLimits.maximumCreateBodyBytes) { request in
            let poll = try await service.create(try PollInput.parseCreate(request.body, now: service.now()))
            return .json(PollBody(poll: poll), status: 201)
        }
        polls.get("", query: Paging.parameters) { request in
            let limit = try request.pageLimit()
            let cursor = request.queryValue("cursor")
            if let cursor {
                let parts = cursor.split(separator: ":", maxSplits: 1)
                guard cursor.utf8.count <= 128, parts.count == 2, Int64(parts[0]) != nil else {
                    throw Paging.invalidCursor()
                }
            }
            let page = try await service.list(limit: limit, cursor: cursor)
            return .json(PageBody("polls", page.items.map { PollBody(poll: $0) }, nextCursor: page.next))
        }
        polls.get("/{id}") { request in
            .json(PollBody(poll: try await service.read(try Self.id(request))))
        }
        polls.describe("POST", "", Self.create)
        polls.describe("GET", "", Self.list)
        polls.describe("GET", "/{id}", Self.read)
        var finalize = FeatureRoute(
            "POST",
            "/v1/polls/{id}/finalize",
            authentication: .apiKeyOrClientToken,
            maxBodySize: PollLimits.maximumBodyBytes
        ) { request in
            try PollInput.parseFinalize(request.body)
            let id = try Self.id(request)
            guard let claims = request.principal as? ClientTokenClaims else {
                return .json(PollBody(poll: try await service.finalize(id, reason: .api)))
            }
            let poll = try await service.finalize(id, reason: .host, hostUserID: claims.subject, app: claims.app)
            return .json(PollTallyBody(poll: poll, userID: claims.subject))
        }
        var client = RouteGroup(
            "/v1/client/polls",
            authentication: .clientToken,
            maxBodySize: PollLimits.maximumBodyBytes
        )
        client.post("/{id}/votes") { request in
            let claims = try request.clientClaims()
            let id = try Self.id(request)
            let option = try PollInput.parseVote(request.body)
            let poll = try await service.vote(id, userID: claims.subject, app: claims.app, option: option)
            return .json(PollTallyBody(poll: poll, userID: claims.subject))
        }
        client.get("/{id}") { request in
            let claims = try request.clientClaims()
            let poll = try await service.read(try Self.id(request), userID: claims.subject, app: claims.app)
            return HTTPResponse.json(PollTallyBody(poll: poll, userID: claims.subject)).conditional(on: request)
        }
        finalize.operation = Self.finalize
        client.describe("POST", "/{id}/votes", Self.vote)
        client.describe("GET", "/{id}", Self.memberRead)
        return polls.routes + [finalize] + client.routes
    }

    /// The path's poll id (404 when it is not a UUID: no poll can have it).
    static func id(_ request: HTTPRequest) throws(PollError) -> UUID {
        guard let id = RequestIdentifier.uuid(request.parameters["id"] ?? "") else { throw .notFound }
        return id
    }
}
