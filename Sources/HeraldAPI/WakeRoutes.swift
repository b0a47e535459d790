import Foundation
public import HTTPRouting
import HeraldCore
import Jobs
public import Wake

/// The wake schedules API under `/v1`, behind ``APIKeys``:
///
/// - `POST /v1/wake-schedules` → 201 with the schedule and `Location`.
/// - `GET /v1/wake-schedules?limit=&cursor=` → `{"wake_schedules": [...], "next_cursor"}`, oldest first.
/// - `GET /v1/wake-schedules/{id}` → the schedule and its last 50 runs, newest first.
/// - `PATCH /v1/wake-schedules/{id}` → 200 with the schedule as changed.
/// - `DELETE /v1/wake-schedules/{id}` → 204.
public struct WakeRoutes: Sendable {
    public let service: WakeService
    public let keys: APIKeys
    public let idempotency: IdempotencyStore

    public init(service: WakeService, keys: APIKeys, idempotency: IdempotencyStore) {
        self.service = service
        self.keys = keys
        self.idempotency = idempotency
    }

    public func register(on router: inout Router) {
        let routes = self
        router.admit(under: "/v1/wake-schedules", keys.admission)
        router.on("POST", "/v1/wake-schedules", maxBodySize: WakeLimits.maximumBodyBytes) { request in
            try await routes.keys.authorized(request, "POST /v1/wake-schedules", query: [], answering: WakeError.self) {
                request in
                try await routes.idempotency.run(request) { try await routes.create($0) }
            }
        }
        router.get("/v1/wake-schedules") { request in
            try await routes.keys.authorized(
                request,
                "GET /v1/wake-schedules",
                query: ["limit", "cursor"],
                answering: WakeError.self
            ) { try await routes.list($0) }
        }
        router.get("/v1/wake-schedules/{id}") { request in
            try await routes.keys.authorized(
                request,
                "GET /v1/wake-schedules/{id}",
                query: [],
                answering: WakeError.self
            ) {
                try await routes.read($0)
            }
        }
        router.on("PATCH", "/v1/wake-schedules/{id}", maxBodySize: WakeLimits.maximumBodyBytes) { request in
            try await routes.keys.authorized(
                request,
                "PATCH /v1/wake-schedules/{id}",
                query: [],
                answering: WakeError.self
            ) { try await routes.update($0) }
        }
        router.delete("/v1/wake-schedules/{id}") { request in
            try await routes.keys.authorized(
                request,
                "DELETE /v1/wake-schedules/{id}",
                query: [],
                answering: WakeError.self
            ) { request in
                try await routes.service.delete(id: try Self.id(request))
                return HTTPResponse(status: 204)
            }
        }
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
        let limit = try request.pageLimit(default: 50, maximum: WakeLimits.pageSizeRange.upperBound)
        let page = try await service.list(limit: limit, cursor: request.queryValue("cursor"))
        return .json(
            WakeScheduleListBody(
                wakeSchedules: page.items.map { WakeScheduleBody($0, runs: nil) },
                nextCursor: page.next
            )
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
