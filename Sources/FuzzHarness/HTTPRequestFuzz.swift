import APNs
import APNsTransport
import ClientTokens
import Foundation
import HTTPRouting
import HeraldAPI
import HeraldCore
import HeraldCrypto
import Relay
import Storage
import Synchronization
import Webhooks

/// Target `http`: a request through the route table `herald serve` composes from the feature list
/// (``HeraldAPI/HeraldComposition``), every handler running for real over an in-memory SQLite
/// database, and through the relay's translation. A route a feature declares is fuzzed by being
/// declared. Nothing leaves the process: APNs refuses every push at once (``RefusingAPNs``), webhook
/// hosts resolve to a documentation address and no job worker runs, so nothing is delivered.
///
/// Input: `METHOD /target?query`, header lines, an empty line, the body. The API key is ``key``
/// (the seeds carry it); a header `X-Fuzz-Client: <user>` is replaced by a client token for that
/// user, signed with the harness's secret, so inputs reach the parsers behind both credentials.
/// A 500 is the finding: a handler failed in a way no refusal describes.
public enum HTTPRequestFuzz {
    public static let key = "fuzz-api-key-0123456789"
    /// A fixed clock: `send_at` checks depend on it, and a finding must replay identically.
    static let now = Date(timeIntervalSince1970: 1_900_000_000)
    static let clientSecret = Array("fuzz-http-client-secret-0123456789abcdef".utf8)
    static let translation = WebPushTranslation(topic: "com.example.fuzz")

    /// The composed router, built on first use.
    private static let composed = Mutex<Task<Router, any Error>?>(nil)

    static func router() async throws -> Router {
        let task = composed.withLock { task in
            if let task { return task }
            let made = Task { try await compose() }
            task = made
            return made
        }
        return try await task.value
    }

    static func compose() async throws -> Router {
        let logger = Logger(label: "fuzz", level: .critical)
        let clock = ManualClock(now)
        let database = try await DatabaseFactory.open(url: "sqlite::memory:", logger: logger)
        let signingKey = try APNSSigningKey(
            keyID: "FUZZKEY001",
            teamID: "FUZZTEAM01",
            privateKey: try P256PrivateKey(rawRepresentation: Array(repeating: 0x22, count: 32))
        )
        let clients = APNSClientProvider(
            apps: [APNSAppConfiguration(bundleID: "com.example.fuzz", credentials: .token(signingKey))],
            endpoints: APNSEndpoints(),
            transports: RefusingAPNs(),
            clock: clock,
            logger: logger
        )
        var inputs = HeraldComposition.Inputs(
            database: database,
            clients: clients,
            apiKeys: APIKeys([key]),
            webhooks: WebhookConfiguration(),
            logger: logger
        )
        // Webhook URLs are checked against an address, never connected to: no worker runs.
        inputs.webhookDestinations = WebhookDestinationPolicy(allowPrivate: false) { _, _ in ["192.0.2.10"] }
        inputs.clientTokens = ClientTokenConfiguration(secret: clientSecret)
        inputs.clock = clock
        var router = try await HeraldComposition.compose(inputs).router
        router.on("POST", "/push/{token}/{id}") { request in
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
            }
        }
        return router
    }

    /// Runs `data` and traps on a 500 (libFuzzer's entry: waits on its own thread, never on
    /// Swift's cooperative pool).
    public static func run(_ data: [UInt8]) {
        let result = Mutex(0)
        let done = DispatchSemaphore(value: 0)
        Task {
            let answered = await Self.status(data)
            result.withLock { $0 = answered }
            done.signal()
        }
        done.wait()
        precondition(result.withLock { $0 } != 500, "the request was answered 500: a handler failed without a refusal")
    }

    /// The status the composed routes answer `data` with (500: a handler threw what no refusal
    /// describes).
    public static func status(_ data: [UInt8]) async -> Int {
        let input = FuzzInput(data)
        let (method, target) = input.methodAndTarget
        var headers = HTTPHeaders()
        for (name, value) in input.headers {
            if name.lowercased() == "x-fuzz-client" {
                headers.add(name: "Authorization", value: "Bearer \(clientToken(for: value))")
            } else {
                headers.add(name: name, value: value)
            }
        }
        var request = HTTPRequest(method: method, path: target, headers: headers, body: input.body)
        do {
            let router = try await router()
            // As the server does: the headers first, the body only when they are admitted.
            switch router.admit(HTTPRequest(method: method, path: target, headers: headers)) {
            case .answer(let response): return response.status
            case .readBody(let limit, let principal):
                if let limit, request.body.count > limit { return 413 }
                request.isAdmitted = true
                request.principal = principal
            }
            return try await router.respond(to: request).status
        } catch let error as HTTPError {
            return error.response.status
        } catch {
            return 500
        }
    }

    /// A client token for `user`, valid at the harness's moment.
    static func clientToken(for user: String) -> String {
        let claims: [String: Any] = [
            "sub": user, "aud": ClientTokenConfiguration.defaultAudience,
            "iat": Int(now.timeIntervalSince1970), "exp": Int(now.timeIntervalSince1970) + 3_600,
        ]
        guard let payload = try? JSONSerialization.data(withJSONObject: claims),
            let token = try? ClientTokenSigner.hs256(secret: clientSecret).token(payload: Array(payload))
        else { return "" }
        return token
    }
}

/// An APNs that takes nothing: every push is refused at once, before anything is sent.
final class RefusingAPNs: APNSTransportFactory, APNSTransport {
    func makeTransport(to endpoint: APNSEndpoint, caFile: String?, credentials: APNSCredentials) -> any APNSTransport {
        self
    }

    func shutdown(_ transport: any APNSTransport) async {}

    func send(
        _ request: APNSTransportRequest,
        completion: @escaping @Sendable (Result<APNSTransportResponse, any Error>) -> Void
    ) {
        completion(.failure(APNSSendRefusal(.unavailable, reason: "the fuzz harness sends nothing")))
    }

    var isReady: Bool { false }

    func prepare() async throws {
        throw APNSSendRefusal(.unavailable, reason: "the fuzz harness sends nothing")
    }
}
