import ClientTokens
import Foundation
import HTTPRouting
import HeraldCore
public import HeraldFeature
import LiveActivities

/// The app-facing board route, behind a client token (``Boards/feature``); the member is the
/// token's `sub`:
///
/// - `POST /v1/client/live-activities/{id}/board` `{"eta_minutes": 0–1440}` (0: arrived) → 200
///   with the merged board `{"members": [...], "arrived": n, "total": m}`; 404 `not_found` for an
///   unknown id and, alike, for an activity without a board or of which the user is not a
///   member; 409 `not_started` once it ended. Nothing is written to the database for an ETA.
public struct BoardRoutes: Sendable {
    public let hub: BoardHub

    public init(hub: BoardHub) {
        self.hub = hub
    }

    /// The most minutes away a member may post: a day.
    public static let etaMinutes: ClosedRange<Int64> = 0...1_440

    public var routes: [FeatureRoute] {
        let hub = self.hub
        var client = RouteGroup("/v1/client", authentication: .clientToken, maxBodySize: 1_024)
        client.post("/live-activities/{id}/board") { request in
            let claims = try request.clientClaims()
            guard let id = RequestIdentifier.uuid(request.parameters["id"] ?? "") else {
                throw LiveActivityError.notFound
            }
            let eta = try Self.parse(request.body)
            let board = try await hub.post(eta, to: id, by: claims.subject, app: claims.app)
            return HTTPResponse(status: 200, headers: ["Content-Type": "application/json"], body: board)
        }
        client.describe("POST", "/live-activities/{id}/board", Self.post)
        return client.routes
    }

    /// What `GET /v1/openapi.json` says of the route.
    static let post = APIOperation(
        "Post a member's estimated arrival to a board",
        description: "A member's client token. Nothing is written to the database: the board is merged in "
            + "memory and broadcast at most once per HERALD_BOARD_MIN_INTERVAL. 404 for an activity without a "
            + "board or of which the user is not a member; 409 not_started once it ended.",
        parameters: ["id": APIParameter("The Live Activity's id.", APISchema.uuid)],
        request: .json(
            "Minutes away; 0 once arrived.",
            APISchema.object(["eta_minutes": APISchema.integer(etaMinutes)], closed: true),
            example: ["eta_minutes": 15]
        ),
        responses: [
            200: .json(
                "The merged board.",
                APISchema.named(
                    "Board",
                    APISchema.object([
                        "arrived": APISchema.integer,
                        "total": APISchema.integer,
                        "members": APISchema.array(
                            APISchema.object([
                                "user_id": APISchema.string,
                                "name": APISchema.string,
                                "arrived": APISchema.boolean,
                                "eta_minutes": APISchema.nullable(APISchema.integer),
                                "updated_at": APISchema.nullable(APISchema.integer),
                            ])
                        ),
                    ])
                )
            )
        ]
    )

    /// `{"eta_minutes": 0–1440}`.
    static func parse(_ body: [UInt8]) throws(LiveActivityError) -> Int {
        var reader = try JSONObjectReader<LiveActivityDomain>(
            body: body,
            maximumDepth: 4,
            what: "a board post",
            example: #"{"eta_minutes": 15}"#
        )
        guard
            let eta = try reader.integer(
                "eta_minutes",
                in: etaMinutes,
                message: "eta_minutes must be a whole number of minutes from 0 (arrived) to 1440"
            )
        else {
            throw .invalid(
                "missing_field",
                #"eta_minutes is missing: send {"eta_minutes": 15}, or 0 once arrived"#,
                field: "eta_minutes"
            )
        }
        try reader.finish(hint: "a board post takes eta_minutes")
        return Int(eta)
    }
}
