public import Foundation
import HTTP2
public import HeraldCore
import Synchronization

/// Sends device pushes, broadcasts and channel management requests through an ``APNSTransport``:
/// validates, authenticates, retries and classifies the answer.
///
/// One client talks to one host (one environment's push host, or its management host); the
/// transport holds the connections. Clients of the same key share one ``APNSTokenManager`` so that
/// every connection presents the same token (APNS.md §2.1).
///
/// ```swift
/// let tokens = APNSTokenManager(signingKey: key, clock: ContinuousClock())
/// let client = APNSClient(transport: pool, credentials: .token(key), tokenProvider: tokens)
/// switch try await client.send(request) {
/// case .delivered: break
/// case .rejected(let rejection) where rejection.isDeviceTokenInvalid: forget(request.deviceToken)
/// case .rejected(let rejection): logger.warning("push refused", metadata: ["reason": "\(rejection.reason)"])
/// }
/// ```
///
/// For each send the client: validates the request (throwing ``APNSValidationError`` before
/// anything is sent); adds `authorization: bearer <token>` for token credentials (none for
/// certificates); retries per ``APNSRetryPolicy``, sleeping on the injected clock; on
/// `ExpiredProviderToken` invalidates the token and sends once more with a fresh one (once per
/// send — and not at all when the token manager cannot refresh yet, see ``APNSTokenManager``).
public struct APNSClient: Sendable {
    public var transport: any APNSTransport { shared.transport }
    /// `nil` for certificate credentials.
    public var tokenProvider: (any APNSTokenProvider)? { shared.tokenProvider }
    public var retryPolicy: APNSRetryPolicy { shared.retryPolicy }
    public var logger: Logger {
        get { shared.logger }
        set { shared = shared.with(logger: newValue) }
    }

    /// Everything in one box: a push in flight keeps a copy of its client for retries, and one
    /// box is one retain per copy. Changing the logger makes a new box.
    private var shared: Shared

    private final class Shared: Sendable {
        let transport: any APNSTransport
        let tokenProvider: (any APNSTokenProvider)?
        let retryPolicy: APNSRetryPolicy
        let logger: Logger
        let sleep: @Sendable (Duration) async throws -> Void
        let random: RandomSource
        /// The transport when it is the real pool: device pushes then take its direct path, which
        /// writes the header fields straight into the HTTP/2 header block and reads the answer in
        /// place (the same bytes on the wire, a fraction of the work per push).
        let pool: APNSConnectionPool?

        init(
            transport: any APNSTransport,
            tokenProvider: (any APNSTokenProvider)?,
            retryPolicy: APNSRetryPolicy,
            logger: Logger,
            sleep: @escaping @Sendable (Duration) async throws -> Void,
            random: RandomSource
        ) {
            self.transport = transport
            self.tokenProvider = tokenProvider
            self.retryPolicy = retryPolicy
            self.logger = logger
            self.sleep = sleep
            self.random = random
            self.pool = transport as? APNSConnectionPool
        }

        func with(logger: Logger) -> Shared {
            Shared(
                transport: transport,
                tokenProvider: tokenProvider,
                retryPolicy: retryPolicy,
                logger: logger,
                sleep: sleep,
                random: random
            )
        }
    }

    private var sleep: @Sendable (Duration) async throws -> Void { shared.sleep }
    private var random: RandomSource { shared.random }
    private var pool: APNSConnectionPool? { shared.pool }

    /// - Parameters:
    ///   - transport: sends to the host this client is for.
    ///   - credentials: token credentials add `authorization`; certificate credentials add nothing.
    ///   - tokenProvider: the shared token manager for token credentials; when `nil`, the client
    ///     makes its own ``APNSTokenManager`` on `clock` and `wallClock`.
    ///   - retryPolicy: when to send again.
    ///   - clock: times retry waits (and the token manager the client makes).
    ///   - wallClock: `iat` for the token manager the client makes.
    ///   - random: the jitter source.
    ///   - logger: retries and refreshes at debug and notice; never tokens or payloads.
    public init<C: Clock<Duration>>(
        transport: any APNSTransport,
        credentials: APNSCredentials,
        tokenProvider: (any APNSTokenProvider)? = nil,
        retryPolicy: APNSRetryPolicy = .default,
        clock: C = ContinuousClock(),
        wallClock: @escaping @Sendable () -> Date = { Date() },
        random: some RandomNumberGenerator & Sendable = SystemRandomNumberGenerator(),
        logger: Logger = Logger(label: "herald.apns")
    ) {
        let provider: (any APNSTokenProvider)?
        switch credentials {
        case .token(let key):
            provider = tokenProvider ?? APNSTokenManager(signingKey: key, clock: clock, wallClock: wallClock)
        case .certificate:
            provider = nil
        }
        self.shared = Shared(
            transport: transport,
            tokenProvider: provider,
            retryPolicy: retryPolicy,
            logger: logger,
            sleep: { duration in try await clock.sleep(for: duration) },
            random: RandomSource(random)
        )
    }

    // MARK: Sends

    /// Sends a device push.
    ///
    /// - Returns: ``APNSSendResult/delivered(_:)`` on 200, otherwise ``APNSSendResult/rejected(_:)``
    ///   with the last refusal.
    /// - Throws: ``APNSValidationError`` (nothing sent), the transport's error when it gave up,
    ///   ``APNSCredentialError`` when signing fails, `CancellationError`.
    public func send(_ request: APNSRequest) async throws -> APNSSendResult {
        try request.validate()
        if let pool { return try await send(request, on: pool) }
        let transport = self.transport
        return try await result(
            perform(label: request.pushType.headerValue, policy: retryPolicy) {
                try await transport.send(request.httpRequest(authorizationHeaderValue: $0?.headerValue))
            }
        )
    }

    /// Sends a device push like ``send(_:)``, but hands APNs' answer to `completion` instead of
    /// returning it, and needs no task on the usual path.
    ///
    /// With a connection pool, a cached provider token and a connection with a free stream, the
    /// push goes out straight from the caller's thread, and a 2xx answer reaches `completion` on
    /// the connection's loop thread, so `completion` must not block. Everything else (no token
    /// yet, connecting, other statuses and the retries they get) continues in a task, with the
    /// same retries and results as ``send(_:)``.
    ///
    /// Unlike ``send(_:)``, the request is not validated here: build it valid (the relay does)
    /// or call ``APNSRequest/validate()`` first.
    package func submit(
        _ request: APNSRequest,
        completion: @escaping @Sendable (Result<APNSSendResult, any Error>) -> Void
    ) {
        let authorization = tokenProvider?.cachedAuthorization()
        guard let pool, tokenProvider == nil || authorization != nil else {
            Task { completion(await Self.result { try await self.send(request) }) }
            return
        }
        pool.submit(Submission(self, request, authorization, completion))
    }

    /// A ``submit(_:completion:)`` on its way: the pool's push, and what a retry needs.
    private final class Submission: APNSPooledPush, @unchecked Sendable {
        // @unchecked Sendable like its superclass; these are constants.
        private let client: APNSClient
        private let request: APNSRequest
        private let authorization: APNSAuthorization?
        private let completion: @Sendable (Result<APNSSendResult, any Error>) -> Void

        init(
            _ client: APNSClient,
            _ request: APNSRequest,
            _ authorization: APNSAuthorization?,
            _ completion: @escaping @Sendable (Result<APNSSendResult, any Error>) -> Void
        ) {
            self.client = client
            self.request = request
            self.authorization = authorization
            self.completion = completion
            super.init(request, authorizationHeaderValue: authorization?.headerValue)
        }

        override func finished(_ first: Result<HTTP2ClientResponse, any Error>) {
            if case .success(let response) = first, (200..<300).contains(response.status) {
                completion(.success(.delivered(response.delivery(attempts: 1))))
                return
            }
            // The client's own pool, which this push went to: `submit` checked it is there.
            guard let pool = client.pool else { preconditionFailure("a pooled push without a pool") }
            let (client, request, authorization, completion) = (client, request, authorization, completion)
            Task {
                completion(
                    await APNSClient.result {
                        try await client.sendRetrying(request, on: pool, first: (authorization, first))
                    }
                )
            }
        }
    }

    private static func result(
        _ body: () async throws -> APNSSendResult
    ) async -> Result<APNSSendResult, any Error> {
        do { return .success(try await body()) } catch { return .failure(error) }
    }

    /// The pool's direct path. The first attempt runs here with as little state as possible (a
    /// task's async frames stay allocated while it waits for APNs, and a sender may have thousands
    /// of pushes in flight); anything but a success on it continues in ``perform(label:policy:first:_:)``.
    @inline(__always)
    private func send(_ request: APNSRequest, on pool: APNSConnectionPool) async throws -> APNSSendResult {
        var authorization: APNSAuthorization?
        if let tokenProvider {
            authorization = tokenProvider.cachedAuthorization()
            if authorization == nil { authorization = APNSAuthorization(token: try await tokenProvider.token()) }
        }
        let first: Result<HTTP2ClientResponse, any Error>
        do {
            let response = try await pool.send(request, authorizationHeaderValue: authorization?.headerValue)
            if (200..<300).contains(response.status) { return .delivered(response.delivery(attempts: 1)) }
            first = .success(response)
        } catch {
            first = .failure(error)
        }
        return try await sendRetrying(request, on: pool, first: (authorization, first))
    }

    @inline(never)
    private func sendRetrying(
        _ request: APNSRequest,
        on pool: APNSConnectionPool,
        first: (APNSAuthorization?, Result<HTTP2ClientResponse, any Error>)?
    ) async throws -> APNSSendResult {
        try await result(
            perform(label: request.pushType.headerValue, policy: retryPolicy, first: first) {
                try await pool.send(request, authorizationHeaderValue: $0?.headerValue)
            }
        )
    }

    /// Sends a broadcast to a channel's subscribers (to the push host, not the management host).
    public func send(_ request: APNSBroadcastRequest) async throws -> APNSSendResult {
        try request.validate()
        let transport = self.transport
        return try await result(
            perform(label: "broadcast", policy: retryPolicy) {
                try await transport.send(request.httpRequest(authorization: $0?.token))
            }
        )
    }

    private func result<Answer: APNSAnswer>(_ outcome: Outcome<Answer>) -> APNSSendResult {
        switch outcome {
        case .success(let response, let attempts): .delivered(response.delivery(attempts: attempts))
        case .failure(let response, let attempts): .rejected(APNSRejection(response: response, attempts: attempts))
        }
    }

    // MARK: Channel management

    /// Creates a broadcast channel and returns the id APNs assigned.
    ///
    /// Not retried on 500: the channel may exist already.
    /// - Throws: ``APNSRejection`` when APNs refuses, ``APNSUnexpectedResponseError`` when a 2xx
    ///   carries no `apns-channel-id`, and what the sends throw.
    public func createChannel(
        bundleID: String,
        storagePolicy: APNSChannelMessageStoragePolicy,
        requestID: UUID? = nil
    ) async throws -> APNSChannelID {
        var policy = retryPolicy
        policy.retryableStatuses.remove(500)
        let response = try await channelRequest(
            .create(bundleID: bundleID, storagePolicy: storagePolicy, requestID: requestID),
            policy: policy
        )
        guard let id = response.headerValue("apns-channel-id"), !id.isEmpty else {
            throw APNSUnexpectedResponseError(status: response.status, message: "no apns-channel-id header")
        }
        return APNSChannelID(rawValue: id)
    }

    /// Reads a channel's storage policy and push type.
    public func channelConfiguration(
        bundleID: String,
        channelID: APNSChannelID,
        requestID: UUID? = nil
    ) async throws -> APNSChannelConfiguration {
        let response = try await channelRequest(.read(bundleID: bundleID, channelID: channelID, requestID: requestID))
        guard let configuration = APNSChannelConfiguration(parsing: response.body) else {
            throw APNSUnexpectedResponseError(
                status: response.status,
                message: "the body is not a channel configuration"
            )
        }
        return configuration
    }

    /// Deletes a channel. Messages already stored may still be delivered.
    public func deleteChannel(bundleID: String, channelID: APNSChannelID, requestID: UUID? = nil) async throws {
        _ = try await channelRequest(.delete(bundleID: bundleID, channelID: channelID, requestID: requestID))
    }

    /// Lists every channel of the app in this environment.
    public func allChannels(bundleID: String, requestID: UUID? = nil) async throws -> [APNSChannelID] {
        let response = try await channelRequest(.listAll(bundleID: bundleID, requestID: requestID))
        guard let ids = APNSChannelList.parse(response.body) else {
            throw APNSUnexpectedResponseError(status: response.status, message: "the body is not a channel list")
        }
        return ids
    }

    private func channelRequest(
        _ request: APNSChannelRequest,
        policy: APNSRetryPolicy? = nil
    ) async throws -> APNSHTTPResponse {
        try request.validate()
        let transport = self.transport
        switch try await perform(
            label: "channel",
            policy: policy ?? retryPolicy,
            { try await transport.send(request.httpRequest(authorization: $0?.token)) }
        ) {
        case .success(let response, _): return response
        case .failure(let response, let attempts): throw APNSRejection(response: response, attempts: attempts)
        }
    }

    // MARK: The loop

    private enum Outcome<Answer> {
        case success(Answer, attempts: Int)
        case failure(APNSErrorResponse, attempts: Int)
    }

    /// Sends with `send` until a success, a refusal not worth retrying, or a transport error the
    /// policy gives up on.
    ///
    /// - Parameter first: the first attempt when the caller already made it (its authorization and
    ///   result); the loop continues from there.
    private func perform<Answer: APNSAnswer>(
        label: String,
        policy: APNSRetryPolicy,
        first: (APNSAuthorization?, Result<Answer, any Error>)? = nil,
        _ send: (APNSAuthorization?) async throws -> Answer
    ) async throws -> Outcome<Answer> {
        var attempt = 1
        var sent = 0
        var rejectedToken: (token: String, response: APNSErrorResponse)?
        var first = first
        while true {
            let authorization: APNSAuthorization?
            let result: Result<Answer, any Error>
            if let made = first {
                first = nil
                (authorization, result) = made
            } else {
                if let cached = tokenProvider?.cachedAuthorization() {
                    authorization = cached
                } else if let token = try await tokenProvider?.token() {
                    authorization = APNSAuthorization(token: token)
                } else {
                    authorization = nil
                }
                if let rejectedToken, authorization?.token == rejectedToken.token {
                    // The token manager cannot refresh yet (20-minute floor): report the refusal.
                    logger.warning(
                        "apns provider token rejected as expired and too young to replace; check the system clock",
                        metadata: ["kind": .string(label)]
                    )
                    return .failure(rejectedToken.response, attempts: sent)
                }
                do {
                    result = .success(try await send(authorization))
                } catch {
                    result = .failure(error)
                }
            }
            sent += 1
            let response: Answer
            switch result {
            case .success(let answer):
                response = answer
            case .failure(let error):
                switch random.use({ policy.decision(afterTransportError: error, attempt: attempt, using: &$0) }) {
                case .retry(let delay):
                    logger.debug(
                        "apns transport error, retrying",
                        metadata: [
                            "kind": .string(label), "attempt": .int(attempt), "delay_ms": .int(delay.milliseconds),
                        ]
                    )
                    try await sleep(delay)
                    attempt += 1
                    continue
                case .giveUp:
                    throw error
                }
            }
            if (200..<300).contains(response.status) {
                return .success(response, attempts: sent)
            }
            let failure = APNSErrorResponse(response.httpResponse)
            if failure.reason == .expiredProviderToken, let authorization, rejectedToken == nil,
                let tokenProvider
            {
                logger.notice("apns provider token expired, refreshing", metadata: ["kind": .string(label)])
                await tokenProvider.invalidate(ifCurrent: authorization.token)
                rejectedToken = (authorization.token, failure)
                continue
            }
            switch random.use({ policy.decision(after: failure, attempt: attempt, using: &$0) }) {
            case .retry(let delay):
                logger.debug(
                    "apns refused, retrying",
                    metadata: [
                        "kind": .string(label), "status": .int(failure.status),
                        "reason": .string(failure.reason.metricLabel), "attempt": .int(attempt),
                        "delay_ms": .int(delay.milliseconds),
                    ]
                )
                try await sleep(delay)
                attempt += 1
            case .giveUp:
                return .failure(failure, attempts: sent)
            }
        }
    }
}

/// A response as the send loop reads it: the status first, the whole response only when needed.
private protocol APNSAnswer {
    var status: Int { get }
    var httpResponse: APNSHTTPResponse { get }
    func delivery(attempts: Int) -> APNSDelivery
}

extension APNSHTTPResponse: APNSAnswer {
    fileprivate var httpResponse: APNSHTTPResponse { self }

    fileprivate func delivery(attempts: Int) -> APNSDelivery {
        APNSDelivery(self, attempts: attempts)
    }
}

extension HTTP2ClientResponse: APNSAnswer {
    fileprivate var httpResponse: APNSHTTPResponse { APNSHTTPResponse(self) }

    /// Reads the ids from the header bytes: no `String` per field on the success path.
    fileprivate func delivery(attempts: Int) -> APNSDelivery {
        var delivery = APNSDelivery(attempts: attempts)
        forEachHeader { name, value in
            if Self.equal(name, "apns-id") {
                delivery.apnsID = APNSIdentifier.parse(bytes: value)
            } else if Self.equal(name, "apns-unique-id") {
                delivery.uniqueID = String(decoding: value, as: UTF8.self)
            } else if Self.equal(name, "apns-request-id") {
                delivery.requestID = APNSIdentifier.parse(bytes: value)
            }
        }
        return delivery
    }

    /// Whether the field name `bytes` is `name` (nghttp2 delivers names in lowercase).
    @inline(__always)
    private static func equal(_ bytes: UnsafeRawBufferPointer, _ name: StaticString) -> Bool {
        bytes.count == name.utf8CodeUnitCount && memcmp(bytes.baseAddress!, name.utf8Start, bytes.count) == 0
    }
}

/// The jitter source, shared by copies of a client.
private final class RandomSource: Sendable {
    private let generator: Mutex<any RandomNumberGenerator & Sendable>

    init(_ generator: some RandomNumberGenerator & Sendable) {
        self.generator = Mutex(generator)
    }

    func use<T: Sendable>(_ body: (inout any RandomNumberGenerator & Sendable) -> T) -> T {
        generator.withLock { body(&$0) }
    }
}

extension Duration {
    fileprivate var milliseconds: Int {
        let (seconds, attoseconds) = components
        return Int(seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }
}
