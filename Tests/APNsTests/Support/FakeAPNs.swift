import APNs
import Foundation
import HeraldCore
import HeraldCrypto
import Synchronization

/// An in-memory APNs that applies Apple's rules (APNS.md §3–§8) to what the client sends: device
/// token format, topic for the push type, provider token (ES256 signature against the registered
/// public key, `iat` no older than an hour by its own wall clock), payload size, 410 with a
/// timestamp for unregistered tokens, 429 for throttled tokens; plus broadcasts and channels.
/// Tests can also queue exact answers or transport errors.
final class FakeAPNs: APNSTransport {
    enum Scripted: Sendable {
        case response(APNSHTTPResponse)
        case error(any Error & Sendable)
    }

    struct TransportFailure: APNSRetryableError, Equatable {
        var isSafeToRetry: Bool
    }

    private struct State {
        var scripted: [Scripted] = []
        var unregistered: [String: Date] = [:]
        var throttled: [String: Int] = [:]
        var channels: [String: APNSChannelMessageStoragePolicy] = [:]
        var nextChannel = 0
        var received: [APNSHTTPRequest] = []
    }

    let bundleID: String
    let keyID: String
    let teamID: String
    let publicKey: P256PublicKey
    private let wallClock: @Sendable () -> Date
    private let state = Mutex(State())

    init(
        bundleID: String,
        keyID: String,
        teamID: String,
        publicKey: P256PublicKey,
        wallClock: @escaping @Sendable () -> Date
    ) {
        self.bundleID = bundleID
        self.keyID = keyID
        self.teamID = teamID
        self.publicKey = publicKey
        self.wallClock = wallClock
    }

    /// Every request received, in order.
    var received: [APNSHTTPRequest] { state.withLock { $0.received } }

    func script(_ items: Scripted...) {
        state.withLock { $0.scripted += items }
    }

    func unregister(_ token: String, at date: Date) {
        state.withLock { $0.unregistered[token] = date }
    }

    /// The next `count` pushes to `token` get 429 TooManyRequests.
    func throttle(_ token: String, count: Int) {
        state.withLock { $0.throttled[token] = count }
    }

    func send(
        _ request: APNSTransportRequest,
        completion: @escaping @Sendable (Result<APNSTransportResponse, any Error>) -> Void
    ) {
        completion(Result { APNSTransportResponse(try respond(to: request.httpRequest)) })
    }

    var isReady: Bool { true }

    func prepare() async throws {}

    /// The scripted answer, or the one Apple's rules give.
    func respond(to request: APNSHTTPRequest) throws -> APNSHTTPResponse {
        let scripted = state.withLock { state -> Scripted? in
            state.received.append(request)
            return state.scripted.isEmpty ? nil : state.scripted.removeFirst()
        }
        switch scripted {
        case .response(let response): return response
        case .error(let error): throw error
        case nil: return answer(request)
        }
    }

    // MARK: Rules

    private func answer(_ request: APNSHTTPRequest) -> APNSHTTPResponse {
        let names = request.headers.map(\.name)
        if Set(names).count != names.count { return refuse(400, "DuplicateHeaders") }
        if request.headers.value(forName: "authorization") == nil {
            return refuse(403, "MissingProviderToken")
        }
        if let refusal = checkProviderToken(request.headers.value(forName: "authorization")!) { return refusal }
        if request.path.hasPrefix("/3/device/") { return device(request) }
        if request.path.hasPrefix("/4/broadcasts/apps/") { return broadcast(request) }
        if request.path.hasPrefix("/1/apps/") { return channels(request) }
        return refuse(404, "BadPath")
    }

    private func checkProviderToken(_ authorization: String) -> APNSHTTPResponse? {
        guard authorization.hasPrefix("bearer "), let token = APNSDecodedProviderToken(authorization) else {
            return refuse(403, "InvalidProviderToken")
        }
        guard token.algorithm == "ES256", token.keyID == keyID, token.teamID == teamID,
            token.isSignatureValid(for: publicKey)
        else { return refuse(403, "InvalidProviderToken") }
        let age = wallClock().timeIntervalSince(token.issuedAt)
        if age > 3600 { return refuse(403, "ExpiredProviderToken") }
        if age < -60 { return refuse(403, "InvalidProviderToken") }
        return nil
    }

    private func device(_ request: APNSHTTPRequest) -> APNSHTTPResponse {
        let headers = request.headers
        let apnsID = headers.value(forName: "apns-id") ?? UUID().uuidString.lowercased()
        func refuse(_ status: Int, _ reason: String, timestamp: Date? = nil) -> APNSHTTPResponse {
            self.refuse(status, reason, timestamp: timestamp, apnsID: apnsID)
        }
        guard request.method == "POST" else { return refuse(405, "MethodNotAllowed") }
        let token = String(request.path.dropFirst("/3/device/".count))
        guard !token.isEmpty else { return refuse(400, "MissingDeviceToken") }
        guard (64...200).contains(token.count), token.count.isMultiple(of: 2),
            token.allSatisfy({ $0.isHexDigit && !$0.isUppercase })
        else { return refuse(400, "BadDeviceToken") }
        guard UUID(uuidString: apnsID) != nil, apnsID == apnsID.lowercased() else {
            return refuse(400, "BadMessageId")
        }
        guard let pushType = headers.value(forName: "apns-push-type").flatMap(APNSPushType.init(headerValue:)) else {
            return refuse(400, "InvalidPushType")
        }
        guard let topic = headers.value(forName: "apns-topic") else { return refuse(400, "MissingTopic") }
        guard topic == pushType.topic(forBundleID: bundleID) else { return refuse(400, "DeviceTokenNotForTopic") }
        if let priority = headers.value(forName: "apns-priority") {
            guard let value = APNSPriority(headerValue: priority), pushType.allowedPriorities.contains(value) else {
                return refuse(400, "BadPriority")
            }
        }
        if let expiration = headers.value(forName: "apns-expiration"), Int64(expiration) == nil {
            return refuse(400, "BadExpirationDate")
        }
        if let collapseID = headers.value(forName: "apns-collapse-id"), collapseID.utf8.count > 64 {
            return refuse(400, "BadCollapseId")
        }
        guard !request.body.isEmpty else { return refuse(400, "PayloadEmpty") }
        guard request.body.count <= pushType.maxPayloadSize else { return refuse(413, "PayloadTooLarge") }
        if let date = state.withLock({ $0.unregistered[token] }) {
            return refuse(410, "Unregistered", timestamp: date)
        }
        let throttled = state.withLock { state -> Bool in
            guard let remaining = state.throttled[token], remaining > 0 else { return false }
            state.throttled[token] = remaining - 1
            return true
        }
        if throttled { return refuse(429, "TooManyRequests") }
        return APNSHTTPResponse(status: 200, headers: [APNSHTTPHeader(name: "apns-id", value: apnsID)])
    }

    private func broadcast(_ request: APNSHTTPRequest) -> APNSHTTPResponse {
        let headers = request.headers
        let path = String(request.path.dropFirst("/4/broadcasts/apps/".count))
        guard path == bundleID else { return refuse(400, "TopicDisallowed") }
        guard let channel = headers.value(forName: "apns-channel-id") else { return refuse(400, "MissingChannelId") }
        guard let policy = state.withLock({ $0.channels[channel] }) else { return refuse(400, "ChannelNotRegistered") }
        guard headers.value(forName: "apns-push-type") == "liveactivity" else { return refuse(400, "InvalidPushType") }
        guard let expiration = headers.value(forName: "apns-expiration"), let seconds = Int64(expiration),
            policy == .mostRecentMessageStored || seconds == 0
        else { return refuse(400, "BadExpirationDate") }
        guard headers.value(forName: "apns-priority").flatMap(APNSPriority.init(headerValue:)) != nil else {
            return refuse(400, "BadPriority")
        }
        guard request.body.count <= 5120 else { return refuse(413, "PayloadTooLarge") }
        return APNSHTTPResponse(
            status: 200,
            headers: [
                APNSHTTPHeader(
                    name: "apns-request-id",
                    value: headers.value(forName: "apns-request-id") ?? UUID().uuidString.lowercased()
                ),
                APNSHTTPHeader(name: "apns-unique-id", value: "unique-1"),
            ]
        )
    }

    private func channels(_ request: APNSHTTPRequest) -> APNSHTTPResponse {
        let requestID = request.headers.value(forName: "apns-request-id") ?? UUID().uuidString.lowercased()
        let idHeader = APNSHTTPHeader(name: "apns-request-id", value: requestID)
        let base = "/1/apps/\(bundleID)"
        switch (request.method, request.path) {
        case ("POST", base + "/channels"):
            guard let body = try? APNSJSONValue(parsing: request.body),
                case .integer(let number)? = body["message-storage-policy"],
                let policy = APNSChannelMessageStoragePolicy(rawValue: Int(number)),
                body["push-type"] == "LiveActivity"
            else { return refuse(400, "BadRequestParams") }
            let id = state.withLock { state -> String in
                state.nextChannel += 1
                let id = Data("channel-\(state.nextChannel)".utf8).base64EncodedString()
                state.channels[id] = policy
                return id
            }
            return APNSHTTPResponse(
                status: 201,
                headers: [idHeader, APNSHTTPHeader(name: "apns-channel-id", value: id)]
            )
        case ("GET", base + "/channels"), ("DELETE", base + "/channels"):
            guard let id = request.headers.value(forName: "apns-channel-id") else {
                return refuse(400, "MissingChannelId")
            }
            let policy = state.withLock { state in
                request.method == "DELETE" ? state.channels.removeValue(forKey: id) : state.channels[id]
            }
            guard let policy else { return refuse(400, "ChannelNotRegistered") }
            if request.method == "DELETE" { return APNSHTTPResponse(status: 204, headers: [idHeader]) }
            let body = #"{"message-storage-policy":\#(policy.rawValue),"push-type":"LiveActivity"}"#
            return APNSHTTPResponse(status: 200, headers: [idHeader], body: Array(body.utf8))
        case ("GET", base + "/all-channels"):
            let ids = state.withLock { $0.channels.keys.sorted() }
            let body = #"{"channels":[\#(ids.map { "\"\($0)\"" }.joined(separator: ","))]}"#
            return APNSHTTPResponse(status: 200, headers: [idHeader], body: Array(body.utf8))
        case (_, base + "/channels"), (_, base + "/all-channels"):
            return refuse(405, "MethodNotAllowed")
        default:
            return refuse(404, "BadPath")
        }
    }

    private func refuse(
        _ status: Int,
        _ reason: String,
        timestamp: Date? = nil,
        apnsID: String? = nil
    ) -> APNSHTTPResponse {
        var body = #"{"reason":"\#(reason)""#
        if let timestamp { body += #","timestamp":\#(Int64(timestamp.timeIntervalSince1970 * 1000))"# }
        body += "}"
        let headers = apnsID.map { [APNSHTTPHeader(name: "apns-id", value: $0)] } ?? []
        return APNSHTTPResponse(status: status, headers: headers, body: Array(body.utf8))
    }
}
