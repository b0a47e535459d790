import Foundation
import HTTPRouting
import HeraldAPI
import HeraldFeature
import Notifications
import Relay
import Storage

/// Target `http`: a request through the real ``Router`` to every `/v1` body and query parser
/// (and on to the SQL values the store would bind), and to the relay's translation, as
/// ``HTTPServer`` would route it.
///
/// Input: `METHOD /target?query`, header lines, an empty line, the body. The API key is
/// ``key`` (the seeds carry it), so inputs reach the parsers behind authentication.
public enum HTTPRequestFuzz {
    public static let key = "fuzz-api-key-0123456789"
    /// A fixed clock: `send_at` checks depend on it, and a finding must replay identically.
    static let now = Date(timeIntervalSince1970: 1_900_000_000)

    static let router: Router = {
        var router = Router()
        let keys = APIKeys([key])
        @Sendable func answer(_ request: HTTPRequest, _ parse: (HTTPRequest) throws -> Void) -> HTTPResponse {
            do {
                try keys.authorize(request)
                try parse(request)
                return HTTPResponse(status: 200)
            } catch let error as HTTPError {
                return error.response
            } catch let error as NotificationError {
                return error.response
            } catch {
                return HTTPResponse(status: 500)
            }
        }
        router.on(
            "POST",
            "/v1/notifications",
            immediately: { request in
                answer(request) {
                    // On to the values the store binds: where a parsed number once overflowed.
                    let parsed = try NotificationRoutes.parseCreate($0, now: now).request
                    _ = NotificationStore.expirationValue(parsed.expiration)
                    _ = SQLValue(parsed.sendAt)
                }
            }
        )
        router.on(
            "GET",
            "/v1/notifications/{id}",
            immediately: { request in
                answer(request) { _ = try NotificationRoutes.parseRead($0) }
            }
        )
        router.on(
            "DELETE",
            "/v1/notifications/{id}",
            immediately: { request in
                answer(request) { _ = try NotificationRoutes.parseRead($0) }
            }
        )
        router.on(
            "GET",
            "/v1/dead-tokens",
            immediately: { request in
                answer(request) { _ = SQLValue(try NotificationRoutes.parseDeadTokens($0).since) }
            }
        )
        let translation = WebPushTranslation(topic: "com.example.fuzz")
        router.on(
            "POST",
            "/push/{token}/{id}",
            immediately: { request in
                do {
                    _ = try translation.translate(
                        rawToken: request.parameters["token"] ?? "",
                        rawID: request.parameters["id"] ?? "",
                        request: request,
                        now: now
                    )
                    return HTTPResponse(status: 201)
                } catch let rejection as RelayRejection {
                    return rejection.httpError.response
                } catch {
                    return HTTPResponse(status: 500)
                }
            }
        )
        return router
    }()

    public static func run(_ data: [UInt8]) {
        _ = status(data)
    }

    /// The status the routed parsers answer `data` with (200: every check passed).
    public static func status(_ data: [UInt8]) -> Int {
        let input = FuzzInput(data)
        let (method, target) = input.methodAndTarget
        let request = HTTPRequest(
            method: method,
            path: target,
            headers: HTTPHeaders(input.headers.map { ($0.name, $0.value) }),
            body: input.body
        )
        _ = router.maximumBodySize(method: request.method, rawPath: request.rawPath)
        return router.respondImmediately(to: request)?.status ?? 0
    }
}
