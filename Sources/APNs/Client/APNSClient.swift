import Foundation
public import HeraldCore
import Synchronization

/// Sends device pushes, broadcasts and channel management requests through an ``APNSTransport``:
/// admits, validates, authenticates, retries and classifies the answer. Every sender (the relay,
/// notifications, later features) sends through this one API.
///
/// One client talks to one host (one environment's push host, or its management host); the
/// transport holds the connections. Clients of the same key share one ``APNSTokenManager`` so that
/// every connection presents the same token (APNS.md §2.1); clients may share one
/// ``APNSSendBudget``, the count of pushes waiting for APNs.
///
/// ```swift
/// let tokens = APNSTokenManager(signingKey: key, clock: SystemClock())
/// let client = APNSClient(transport: pool, credentials: .token(key), tokenProvider: tokens)
/// switch try await client.send(request) {
/// case .delivered: break
/// case .rejected(let rejection) where rejection.isDeviceTokenInvalid: forget(request.deviceToken)
/// case .rejected(let rejection): logger.warning("push refused", metadata: ["reason": "\(rejection.reason)"])
/// }
/// ```
///
/// A device push goes out in one of two ways, which differ only in how they wait:
/// - ``send(_:)-(APNSRequest)`` waits for room in the budget, then for APNs' answer.
/// - ``submit(_:completion:)`` never waits: it hands the push to a connection at once or refuses
///   with a typed ``APNSSendRefusal`` (budget full, no connection at hand), and `completion` gets
///   the answer. Retries of a submitted push run in ``run()``.
///
/// For each push the client: validates the request (throwing ``APNSValidationError`` before
/// anything is sent; ``submit(_:completion:)`` leaves that to the caller); adds
/// `authorization: bearer <token>` for token credentials (none for certificates); retries per
/// ``APNSRetryPolicy``, sleeping on the injected clock; on `ExpiredProviderToken` invalidates the
/// token and sends once more with a fresh one (once per send — and not at all when the token
/// manager cannot refresh yet, see ``APNSTokenManager``).
public struct APNSClient: Sendable {
    public var transport: any APNSTransport { shared.transport }
    /// `nil` for certificate credentials.
    public var tokenProvider: (any APNSTokenProvider)? { shared.tokenProvider }
    public var retryPolicy: APNSRetryPolicy { shared.retryPolicy }
    /// The pushes waiting for APNs, with the limits senders are held to.
    public var budget: APNSSendBudget { shared.budget }
    public var logger: Logger {
        get { shared.logger }
        set { shared = shared.with(logger: newValue) }
    }

    /// Everything in one box: a push in flight keeps a copy of its client for retries, and one
    /// box is one retain per copy. Changing the logger makes a new box.
    var shared: Shared

    final class Shared: Sendable {
        let transport: any APNSTransport
        let tokenProvider: (any APNSTokenProvider)?
        let retryPolicy: APNSRetryPolicy
        let budget: APNSSendBudget
        let logger: Logger
        /// Retry waits sleep on it.
        let clock: any HeraldClock
        let random: RandomSource
        let followUps: FollowUps

        init(
            transport: any APNSTransport,
            tokenProvider: (any APNSTokenProvider)?,
            retryPolicy: APNSRetryPolicy,
            budget: APNSSendBudget,
            logger: Logger,
            clock: any HeraldClock,
            random: RandomSource,
            followUps: FollowUps
        ) {
            self.transport = transport
            self.tokenProvider = tokenProvider
            self.retryPolicy = retryPolicy
            self.budget = budget
            self.logger = logger
            self.clock = clock
            self.random = random
            self.followUps = followUps
        }

        func with(logger: Logger) -> Shared {
            Shared(
                transport: transport,
                tokenProvider: tokenProvider,
                retryPolicy: retryPolicy,
                budget: budget,
                logger: logger,
                clock: clock,
                random: random,
                followUps: followUps
            )
        }
    }

    /// - Parameters:
    ///   - transport: sends to the host this client is for.
    ///   - credentials: token credentials add `authorization`; certificate credentials add nothing.
    ///   - tokenProvider: the shared token manager for token credentials; when `nil`, the client
    ///     makes its own ``APNSTokenManager`` on `clock`.
    ///   - retryPolicy: when to send again.
    ///   - budget: the count of pushes waiting for APNs, shared with other clients or not.
    ///   - clock: retry waits sleep on it; the token manager the client makes times refreshes
    ///     and stamps `iat` with it.
    ///   - random: the jitter source.
    ///   - logger: retries and refreshes at debug and notice; never tokens or payloads.
    public init(
        transport: any APNSTransport,
        credentials: APNSCredentials,
        tokenProvider: (any APNSTokenProvider)? = nil,
        retryPolicy: APNSRetryPolicy = .default,
        budget: APNSSendBudget = APNSSendBudget(),
        clock: any HeraldClock = SystemClock(),
        random: some RandomNumberGenerator & Sendable = SystemRandomNumberGenerator(),
        logger: Logger = Logger(label: "herald.apns")
    ) {
        let provider: (any APNSTokenProvider)?
        switch credentials {
        case .token(let key):
            provider = tokenProvider ?? APNSTokenManager(signingKey: key, clock: clock)
        case .certificate:
            provider = nil
        }
        self.shared = Shared(
            transport: transport,
            tokenProvider: provider,
            retryPolicy: retryPolicy,
            budget: budget,
            logger: logger,
            clock: clock,
            random: RandomSource(random),
            followUps: FollowUps()
        )
    }

    // MARK: Device pushes

    /// Sends a device push: waits for room in ``budget``, then for APNs' answer (after retries).
    ///
    /// - Returns: ``APNSSendResult/delivered(_:)`` on 200, otherwise ``APNSSendResult/rejected(_:)``
    ///   with the last refusal.
    /// - Throws: ``APNSValidationError`` (nothing sent), the transport's error when it gave up,
    ///   ``APNSCredentialError`` when signing fails, `CancellationError`.
    public func send(_ request: APNSRequest) async throws -> APNSSendResult {
        try request.validate()
        let budget = shared.budget
        // The usual case, room at once, makes no async call.
        if !budget.hasRoom && !budget.isClosed { try await budget.waitForRoom() }
        budget.admitAfterWaiting()
        defer { budget.release() }
        return try await sendCounted(request)
    }

    /// The first attempt with as little state as possible (a task's async frames stay allocated
    /// while it waits for APNs, and a sender may have thousands of pushes in flight); anything but
    /// a success continues in ``sendRetrying(_:first:)``.
    @inline(__always)
    private func sendCounted(_ request: APNSRequest) async throws -> APNSSendResult {
        var authorization: APNSAuthorization?
        if let tokenProvider {
            authorization = tokenProvider.cachedAuthorization()
            if authorization == nil { authorization = APNSAuthorization(token: try await tokenProvider.token()) }
        }
        let first: Result<APNSTransportResponse, any Error>
        do {
            let response = try await shared.transport.send(
                APNSTransportRequest(request, authorizationHeaderValue: authorization?.headerValue)
            )
            if (200..<300).contains(response.status) { return .delivered(response.delivery(attempts: 1)) }
            first = .success(response)
        } catch {
            first = .failure(error)
        }
        return try await sendRetrying(request, first: (authorization, first))
    }

    /// Hands a device push to a connection now, without waiting, or refuses it at once.
    ///
    /// Taken when ``budget`` has fewer than its ``APNSSendBudget/Configuration/limit`` pushes
    /// waiting, a provider token is at hand (token credentials) and a connection can take the push
    /// without connecting first. Otherwise nothing is sent, `completion` is never called, and the
    /// refusal says why: ``APNSSendRefusal/Code/full``, or ``APNSSendRefusal/Code/unavailable``
    /// (then ``prepare()`` connects and fetches a token, or the budget is closed). The push counts
    /// in ``budget`` until `completion` has returned.
    ///
    /// `completion` runs exactly once. A success on the first attempt reaches it on the I/O thread
    /// of the connection the push went to (so it must not block); anything else goes through the
    /// retries of ``send(_:)-(APNSRequest)``, in a task of ``run()``, and reaches it there. So a
    /// client that submits needs ``run()`` running.
    ///
    /// Unlike ``send(_:)-(APNSRequest)``, the request is not validated here: build it valid (the
    /// relay does) or call ``APNSRequest/validate()`` first.
    public func submit(
        _ request: APNSRequest,
        completion: @escaping @Sendable (Result<APNSSendResult, any Error>) -> Void
    ) -> APNSSendRefusal? {
        let shared = self.shared
        let budget = shared.budget
        if budget.isClosed { return APNSSendRefusal(.unavailable, reason: "new pushes are not taken any more") }
        var cached: APNSAuthorization?
        if let tokenProvider = shared.tokenProvider {
            cached = tokenProvider.cachedAuthorization()
            if cached == nil { return APNSSendRefusal(.unavailable, reason: "no provider token is ready yet") }
        }
        let authorization = cached
        if let refused = budget.admit() {
            return refused == .full
                ? APNSSendRefusal(.full, reason: "\(budget.configuration.limit) pushes are waiting for APNs")
                : APNSSendRefusal(.unavailable, reason: "new pushes are not taken any more")
        }
        let transportRequest = APNSTransportRequest(request, authorizationHeaderValue: authorization?.headerValue)
        let refusal = shared.transport.submit(transportRequest) { first in
            if case .success(let response) = first, (200..<300).contains(response.status) {
                completion(.success(.delivered(response.delivery(attempts: 1))))
                budget.release()
                return
            }
            shared.followUps.enqueue {
                let client = APNSClient(shared: shared)
                completion(await Self.result { try await client.sendRetrying(request, first: (authorization, first)) })
                budget.release()
            }
        }
        if refusal != nil { budget.release() }
        return refusal
    }

    /// Makes the next ``submit(_:completion:)`` likely to be taken: fetches a provider token and
    /// opens a connection when there is none.
    ///
    /// - Throws: ``APNSCredentialError`` when signing fails; the transport's error when it cannot
    ///   connect (``APNsTransport/APNSConnectionPoolError``); `CancellationError`.
    public func prepare() async throws {
        if let tokenProvider, tokenProvider.cachedAuthorization() == nil { _ = try await tokenProvider.token() }
        try await transport.prepare()
    }

    /// Runs the retries of submitted pushes (each in a child task) until cancelled; then the ones
    /// still running are cancelled and awaited. Retries that arrive while it is not running wait
    /// for the next call. One call at a time, from the service that owns the client.
    public func run() async {
        await shared.followUps.run()
    }

    init(shared: Shared) {
        self.shared = shared
    }

    static func result(
        _ body: () async throws -> APNSSendResult
    ) async -> Result<APNSSendResult, any Error> {
        do { return .success(try await body()) } catch { return .failure(error) }
    }
}

/// The retries of submitted pushes whose first answer was not a success, queued for
/// ``APNSClient/run()``: kept while it is not running, run in its task group while it is.
final class FollowUps: Sendable {
    typealias Work = @Sendable () async -> Void

    private struct State {
        var queued = FIFOQueue<Work>()
        var runner: CheckedContinuation<Work?, Never>?
        var cancelled = false
    }

    private let state = Mutex(State())

    func enqueue(_ work: @escaping Work) {
        let runner = state.withLock { state -> CheckedContinuation<Work?, Never>? in
            guard let runner = state.runner else {
                state.queued.append(work)
                return nil
            }
            state.runner = nil
            return runner
        }
        runner?.resume(returning: work)
    }

    /// Runs queued and arriving work, each in a child task, until the calling task is cancelled;
    /// then waits for the children, which see the cancellation.
    func run() async {
        state.withLock { $0.cancelled = false }
        await withDiscardingTaskGroup { group in
            while let work = await next() {
                group.addTask { await work() }
            }
        }
    }

    private func next() async -> Work? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Work?, Never>) in
                let ready = state.withLock { state -> Work?? in
                    if state.cancelled { return .some(nil) }
                    if let work = state.queued.popFirst() { return .some(work) }
                    state.runner = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            let runner = state.withLock { state -> CheckedContinuation<Work?, Never>? in
                state.cancelled = true
                defer { state.runner = nil }
                return state.runner
            }
            runner?.resume(returning: nil)
        }
    }
}

/// The jitter source, shared by copies of a client.
final class RandomSource: Sendable {
    private let generator: Mutex<any RandomNumberGenerator & Sendable>

    init(_ generator: some RandomNumberGenerator & Sendable) {
        self.generator = Mutex(generator)
    }

    func use<T: Sendable>(_ body: (inout any RandomNumberGenerator & Sendable) -> T) -> T {
        generator.withLock { body(&$0) }
    }
}
