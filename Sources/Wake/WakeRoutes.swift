import Foundation
import HTTPRouting
import HeraldCore
public import HeraldFeature
import Jobs

/// The wake schedules API under `/v1`, behind an API key (``Wake/feature``):
///
/// - `POST /v1/wake-schedules` → 201 with the schedule and `Location`; accepts `Idempotency-Key`.
/// - `GET /v1/wake-schedules?limit=&cursor=` → `{"wake_schedules": [...], "next_cursor"}`, oldest first.
/// - `GET /v1/wake-schedules/{id}` → the schedule and its last 50 runs, newest first.
/// - `PATCH /v1/wake-schedules/{id}` → 200 with the schedule as changed.
/// - `DELETE /v1/wake-schedules/{id}` → 204.
public struct WakeRoutes: Sendable {
    public let service: WakeService

    public init(service: WakeService) {
        self.service = service
    }

    /// The five routes, behind an API key.
    public var routes: [FeatureRoute] {
        let routes = self
        var group = RouteGroup("/v1/wake-schedules", authentication: .apiKey, maxBodySize: WakeLimits.maximumBodyBytes)
        group.post("", idempotent: true) { try await routes.create($0) }
        group.describe("POST", "", Self.createOperation)
        group.get("", query: Paging.parameters) { try await routes.list($0) }
        group.describe("GET", "", Self.listOperation)
        group.get("/{id}") { try await routes.read($0) }
        group.describe("GET", "/{id}", Self.readOperation)
        group.on("PATCH", "/{id}") { try await routes.update($0) }
        group.describe("PATCH", "/{id}", Self.updateOperation)
        group.delete("/{id}") { request in
            try await routes.service.delete(id: try Self.id(request))
            return HTTPResponse(status: 204)
        }
        group.describe("DELETE", "/{id}", Self.deleteOperation)
        return group.routes
    }

    func create(_ request: HTTPRequest) async throws -> HTTPResponse {
        let parsed = try WakeScheduleRequest.parse(request.body, now: service.now())
        let schedule = try await service.create(parsed)
        var response = HTTPResponse.json(WakeScheduleBody(schedule, runs: nil), status: 201)
        response.headers.replaceOrAdd(
            name: "Location",
            value: "/v1/wake-schedules/\(RequestIdentifier.lowercaseString(schedule.id))"
        )
        return response
    }

    func list(_ request: HTTPRequest) async throws -> HTTPResponse {
        let limit = try request.pageLimit()
        var cursor: WakeListCursor?
        if let text = request.queryValue("cursor") {
            guard let parsed = WakeListCursor(text: text) else { throw Paging.invalidCursor() }
            cursor = parsed
        }
        let page = try await service.list(limit: limit, after: cursor)
        return .json(
            PageBody("wake_schedules", page.items.map { WakeScheduleBody($0, runs: nil) }, nextCursor: page.next)
        )
    }

    func read(_ request: HTTPRequest) async throws -> HTTPResponse {
        let (schedule, runs) = try await service.schedule(id: try Self.id(request))
        return .json(WakeScheduleBody(schedule, runs: runs))
    }

    func update(_ request: HTTPRequest) async throws -> HTTPResponse {
        let id = try Self.id(request)
        let patch = try WakeSchedulePatch.parse(request.body)
        return .json(WakeScheduleBody(try await service.update(id: id, patch), runs: nil))
    }

    static func id(_ request: HTTPRequest) throws(HTTPError) -> UUID {
        guard let text = request.parameters["id"], let id = RequestIdentifier.uuid(text) else {
            throw HTTPError(
                status: 404,
                code: "not_found",
                message: "that is not a wake schedule id: use the id POST /v1/wake-schedules answered with",
                field: "id"
            )
        }
        return id
    }
}
