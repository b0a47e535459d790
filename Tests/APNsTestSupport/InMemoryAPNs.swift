public import APNs
import Foundation
public import HeraldCore
import Synchronization

/// APNs in memory, for the domains' tests: an ``APNs/APNSTransportFactory`` whose transports
/// answer from a script instead of a socket, and record every request they get.
///
/// Answers are looked up in order: the next of ``scriptNext(_:)`` (whatever the request), then
/// the next of ``script(_:_:)`` for the request's device token, then the token's standing answer
/// (``always(_:_:)``), and otherwise success: 200 with the request's `apns-id` (or a new one) for a
/// push, 201 with a new `apns-channel-id` for a channel made, 200 for anything else.
///
/// ```swift
/// let apns = InMemoryAPNs(clock: clock)
/// apns.script(token, .tooManyRequests, .success)
/// apns.always(deadToken, .unregistered(at: clock.now()))
/// let clients = APNSClientProvider(apps: apps, endpoints: APNSEndpoints(), transports: apns, clock: clock)
/// …
/// #expect(apns.requests(to: token).map(\.status) == [429, 200])
/// ```
///
/// The clock to go with it is HeraldCore's ``HeraldCore/ManualClock``: pass the same one to the
/// provider, and the clients' retry waits end when the test moves it:
///
/// ```swift
/// apns.script(token, .tooManyRequests(retryAfter: 2), .success)
/// async let sent = worker.runDueJobs()
/// try await clock.advanceToNextDeadline()
/// ```
///
/// Its transports answer each request at once, on the sender's thread, and are always ready.
public final class InMemoryAPNs: APNSTransportFactory {
    private struct State {
        var next: [Answer] = []
        var scripted: [String: [Answer]] = [:]
        var standing: [String: Answer] = [:]
        var requests: [RecordedAPNSRequest] = []
        var transports: [APNSEndpoint] = []
        var shutDown = 0
        var nextChannel = 0
    }

    private let state = Mutex(State())
    let clock: any HeraldClock

    /// - Parameter clock: stamps each request's ``RecordedAPNSRequest/receivedAt`` (the test's
    ///   manual clock, so that retry waits can be read off the requests).
    public init(clock: any HeraldClock = ManualClock()) {
        self.clock = clock
    }

    // MARK: Script

    /// Answers the next requests, whatever they are for, with `answers` in order (before any
    /// answer scripted per token).
    public func scriptNext(_ answers: Answer...) {
        state.withLock { $0.next += answers }
    }

    /// Answers the next pushes to `token` with `answers` in order; then its standing answer, or
    /// success.
    public func script(_ token: String, _ answers: Answer...) {
        state.withLock { $0.scripted[token, default: []] += answers }
    }

    /// Answers every push to `token` with `answer` once its scripted answers are used.
    public func always(_ token: String, _ answer: Answer) {
        state.withLock { $0.standing[token] = answer }
    }

    // MARK: Record

    /// Every request received, in order, with what it was answered.
    public var requests: [RecordedAPNSRequest] { state.withLock { $0.requests } }

    /// The device pushes received for `token`, in order.
    public func requests(to token: String) -> [RecordedAPNSRequest] {
        state.withLock { $0.requests.filter { $0.deviceToken == token } }
    }

    /// The hosts of the transports made so far, in order (one per app, environment and host).
    public var transportEndpoints: [APNSEndpoint] { state.withLock { $0.transports } }

    /// How many transports have been shut down.
    public var shutDownCount: Int { state.withLock { $0.shutDown } }

    // MARK: APNSTransportFactory

    public func makeTransport(
        to endpoint: APNSEndpoint,
        caFile: String?,
        credentials: APNSCredentials
    ) -> any APNSTransport {
        state.withLock { $0.transports.append(endpoint) }
        return Transport(endpoint: endpoint, apns: self)
    }

    public func shutdown(_ transport: any APNSTransport) async {
        state.withLock { $0.shutDown += 1 }
    }

    // MARK: Answering

    fileprivate func answer(_ request: APNSHTTPRequest, endpoint: APNSEndpoint) throws -> APNSHTTPResponse {
        let token = RecordedAPNSRequest.deviceToken(ofPath: request.path)
        let (answer, channel) = state.withLock { state -> (Answer?, Int) in
            if request.method == "POST", request.path.hasSuffix("/channels") { state.nextChannel += 1 }
            if !state.next.isEmpty { return (state.next.removeFirst(), state.nextChannel) }
            guard let token else { return (nil, state.nextChannel) }
            if var queue = state.scripted[token], !queue.isEmpty {
                let first = queue.removeFirst()
                state.scripted[token] = queue
                return (first, state.nextChannel)
            }
            return (state.standing[token], state.nextChannel)
        }
        let response: Result<APNSHTTPResponse, any Error> =
            switch answer ?? .success {
            case .success: .success(Self.success(request, channel: channel))
            case .refused(let status, let reason, let timestamp, let retryAfter):
                .success(
                    Self.refusal(request, status: status, reason: reason, timestamp: timestamp, retryAfter: retryAfter)
                )
            case .transportError(let error): .failure(error)
            }
        state.withLock { state in
            state.requests.append(
                RecordedAPNSRequest(
                    endpoint: endpoint,
                    request: request,
                    status: try? response.get().status,
                    receivedAt: clock.now()
                )
            )
        }
        return try response.get()
    }

    private static func success(_ request: APNSHTTPRequest, channel: Int) -> APNSHTTPResponse {
        let headers = request.headers
        if request.path.hasPrefix("/3/device/") {
            let apnsID = headers.value(forName: "apns-id") ?? UUID().uuidString.lowercased()
            return APNSHTTPResponse(status: 200, headers: [APNSHTTPHeader(name: "apns-id", value: apnsID)])
        }
        let requestID = APNSHTTPHeader(
            name: "apns-request-id",
            value: headers.value(forName: "apns-request-id") ?? UUID().uuidString.lowercased()
        )
        if request.method == "POST", request.path.hasSuffix("/channels") {
            let id = Data("channel-\(channel)".utf8).base64EncodedString()
            return APNSHTTPResponse(
                status: 201,
                headers: [requestID, APNSHTTPHeader(name: "apns-channel-id", value: id)]
            )
        }
        if request.method == "DELETE" { return APNSHTTPResponse(status: 204, headers: [requestID]) }
        return APNSHTTPResponse(
            status: 200,
            headers: [requestID, APNSHTTPHeader(name: "apns-unique-id", value: "u-1")]
        )
    }

    private static func refusal(
        _ request: APNSHTTPRequest,
        status: Int,
        reason: String,
        timestamp: Date?,
        retryAfter: Int?
    ) -> APNSHTTPResponse {
        var body = #"{"reason":"\#(reason)""#
        if let timestamp { body += #","timestamp":\#(Int64(timestamp.timeIntervalSince1970 * 1000))"# }
        body += "}"
        let apnsID = request.headers.value(forName: "apns-id") ?? UUID().uuidString.lowercased()
        var headers = [APNSHTTPHeader(name: "apns-id", value: apnsID)]
        if let retryAfter { headers.append(APNSHTTPHeader(name: "retry-after", value: "\(retryAfter)")) }
        return APNSHTTPResponse(status: status, headers: headers, body: Array(body.utf8))
    }

    /// One host's transport: answers through its ``InMemoryAPNs``.
    private final class Transport: APNSTransport {
        let endpoint: APNSEndpoint
        let apns: InMemoryAPNs

        init(endpoint: APNSEndpoint, apns: InMemoryAPNs) {
            self.endpoint = endpoint
            self.apns = apns
        }

        func send(
            _ request: APNSTransportRequest,
            completion: @escaping @Sendable (Result<APNSTransportResponse, any Error>) -> Void
        ) {
            completion(Result { APNSTransportResponse(try apns.answer(request.httpRequest, endpoint: endpoint)) })
        }

        var isReady: Bool { true }

        func prepare() async throws {}
    }
}
