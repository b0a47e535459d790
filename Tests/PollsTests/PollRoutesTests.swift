import ClientTokens
import DatabaseTestSupport
import Foundation
import HTTPRouting
import HeraldAPI
import HeraldCore
import HeraldFeature
import Testing

@testable import Polls

/// Stands in for the client-token check: the `User` header is the token's `sub`, `App` its
/// `app` claim.
struct HeaderClients: RequestAuthenticator {
    var admission: Router.AdmissionCheck {
        { request in
            guard let user = request.headers["User"] else { return HTTPResponse(status: 401) }
            let now = Date(timeIntervalSince1970: 1_790_000_000)
            request.principal = ClientTokenClaims(
                subject: user,
                app: request.headers["App"],
                issuedAt: now,
                expiresAt: now.addingTimeInterval(3_600)
            )
            return nil
        }
    }
}

/// Stands in for the key-or-token check: a `User` header as ``HeaderClients``, else the API key.
struct KeyOrHeaderClients: RequestAuthenticator {
    let keys: APIKeys

    var admission: Router.AdmissionCheck {
        { request in
            request.headers["User"] == nil ? keys.admission(&request) : HeaderClients().admission(&request)
        }
    }
}

/// The Polls routes behind the shared request machinery: statuses, fields, `ETag` and 304, and
/// which credential each takes.
@Suite("Polls: the routes")
struct PollRoutesTests {
    static let key = "polls-test-key-0123456789"
    let t = Date(timeIntervalSince1970: 1_790_000_000)

    static func router(_ service: PollService) throws -> Router {
        var router = Router()
        try router.register(
            PollRoutes(service: service).routes,
            machinery: RequestMachinery(authenticators: [
                .apiKey: APIKeys([key]), .clientToken: HeaderClients(),
                .apiKeyOrClientToken: KeyOrHeaderClients(keys: APIKeys([key])),
            ])
        )
        return router
    }

    static func send(
        _ router: Router,
        _ method: String,
        _ path: String,
        user: String? = nil,
        app: String? = nil,
        body: String = "",
        headers extra: [(String, String)] = []
    ) async throws -> (status: Int, json: [String: JSONValue], headers: HTTPHeaders) {
        var headers = HTTPHeaders()
        if let user {
            headers.add(name: "User", value: user)
        } else {
            headers.add(name: "Authorization", value: "Bearer \(key)")
        }
        if let app { headers.add(name: "App", value: app) }
        if !body.isEmpty { headers.add(name: "Content-Type", value: "application/json") }
        for (name, value) in extra { headers.add(name: name, value: value) }
        var request = HTTPRequest(method: method, path: path, headers: headers, body: Array(body.utf8))
        let response: HTTPResponse
        switch router.admit(request, refusal: nil) {
        case .answer(let refusal):
            response = refusal
        case .readBody(_, let principal):
            request.principal = principal
            do {
                response = try await router.respond(to: request)
            } catch let error as HTTPError {
                response = error.response
            }
        }
        let json = (try? JSONValue.parse(response.body))?.objectValue ?? [:]
        return (response.status, json, response.headers)
    }

    @Test("create, vote, read with ETag and 304, finalize by the host, 409 after", arguments: Backend.allCases)
    func flow(backend: Backend) async throws {
        let clock = ManualClock(t)
        try await withPolls(backend, clock: clock) { instances, _, _ in
            let router = try Self.router(instances[0].polls)
            let body = String(decoding: createBody(members: 3, host: "u2", liveActivity: false), as: UTF8.self)
            let created = try await Self.send(router, "POST", "/v1/polls", body: body)
            #expect(created.status == 201)
            let id = try #require(created.json["id"]?.stringValue)
            #expect(created.json["final"] == false)

            let refused = try await Self.send(router, "POST", "/v1/polls", body: #"{"question": "q"}"#)
            #expect(refused.status == 400)
            #expect(refused.json["error"]?.objectValue?["field"] == "options")

            let vote = try await Self.send(
                router,
                "POST",
                "/v1/client/polls/\(id)/votes",
                user: "u1",
                body: #"{"option": "accept"}"#
            )
            #expect(vote.status == 200)
            #expect(vote.json["voted"] == 1)
            #expect(vote.json["my_option"] == "accept")
            let unknown = try await Self.send(
                router,
                "POST",
                "/v1/client/polls/\(id)/votes",
                user: "u1",
                body: #"{"option": "x"}"#
            )
            #expect(unknown.status == 422)
            #expect(unknown.json["error"]?.objectValue?["field"] == "option")
            let stranger = try await Self.send(
                router,
                "POST",
                "/v1/client/polls/\(id)/votes",
                user: "zed",
                body: #"{"option": "accept"}"#
            )
            let otherApp = try await Self.send(
                router,
                "POST",
                "/v1/client/polls/\(id)/votes",
                user: "u1",
                app: "com.example.other",
                body: #"{"option": "accept"}"#
            )
            let missing = try await Self.send(
                router,
                "POST",
                "/v1/client/polls/\(UUID())/votes",
                user: "u1",
                body: #"{"option": "accept"}"#
            )
            #expect([stranger.status, otherApp.status, missing.status] == [404, 404, 404] as [Int])
            #expect(
                JSONValue.object(stranger.json) == JSONValue.object(missing.json),
                "a non-member learns nothing more than for an unknown id"
            )

            let read = try await Self.send(router, "GET", "/v1/client/polls/\(id)", user: "u3")
            #expect(read.status == 200)
            let etag = try #require(read.headers["ETag"])
            let unchanged = try await Self.send(
                router,
                "GET",
                "/v1/client/polls/\(id)",
                user: "u3",
                headers: [("If-None-Match", etag)]
            )
            #expect(unchanged.status == 304)

            let notHost = try await Self.send(router, "POST", "/v1/polls/\(id)/finalize", user: "u1")
            #expect(notHost.status == 403)
            #expect(notHost.json["error"]?.objectValue?["code"] == "not_host")
            let strangerFinalizing = try await Self.send(router, "POST", "/v1/polls/\(id)/finalize", user: "zed")
            #expect(strangerFinalizing.status == 404, "a non-member's token reaches no poll")
            let extra = try await Self.send(router, "POST", "/v1/polls/\(id)/finalize", body: #"{"now": true}"#)
            #expect(extra.status == 400)
            #expect(extra.json["error"]?.objectValue?["code"] == "unknown_field")
            let byHost = try await Self.send(router, "POST", "/v1/polls/\(id)/finalize", user: "u2")
            #expect(byHost.status == 200)
            #expect(byHost.json["final"] == true)
            #expect(byHost.json["my_option"] == .null, "the host's own tally: the host has not voted")
            let changed = try await Self.send(
                router,
                "GET",
                "/v1/client/polls/\(id)",
                user: "u3",
                headers: [("If-None-Match", etag)]
            )
            #expect(changed.status == 200, "the final tally is another state")
            let late = try await Self.send(
                router,
                "POST",
                "/v1/client/polls/\(id)/votes",
                user: "u3",
                body: #"{"option": "decline"}"#
            )
            #expect(late.status == 409)
            #expect(late.json["error"]?.objectValue?["code"] == "poll_final")
            let again = try await Self.send(router, "POST", "/v1/polls/\(id)/finalize")
            #expect(again.status == 409)

            let polled = try await Self.send(router, "GET", "/v1/polls/\(id)")
            #expect(polled.status == 200)
            #expect(polled.json["tally"]?.objectValue?["voted"] == 1)
            let page = try await Self.send(router, "GET", "/v1/polls?limit=1")
            #expect(page.status == 200)
            #expect(page.json["polls"].map { if case .array(let items) = $0 { items.count } else { -1 } } == 1)
            let badLimit = try await Self.send(router, "GET", "/v1/polls?limit=0")
            #expect(badLimit.status == 400)
            let noKey = try await Self.send(router, "GET", "/v1/polls/\(id)", user: "u1")
            #expect(noKey.status == 401, "the API routes take no client token")
        }
    }
}
