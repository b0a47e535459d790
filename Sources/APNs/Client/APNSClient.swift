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
/// A device push goes out one way, ``send(_:completion:)``: the client takes it (or refuses it,
/// typed, when the budget is full or closed) and calls back with the answer.
/// ``send(_:)-(APNSRequest)`` awaits the same call, waiting for room instead of being refused.
///
/// For each push the client: validates the request in the awaiting form (throwing
/// ``APNSValidationError`` before anything is sent); adds `authorization: bearer <token>` for
/// token credentials (none for certificates); retries per ``APNSRetryPolicy``, sleeping on the
/// injected clock; on `ExpiredProviderToken` invalidates the token and sends once more with a
/// fresh one (once per send — and not at all when the token manager cannot refresh yet, see
/// ``APNSTokenManager``).
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

    /// Sends a device push and awaits its answer (after retries): ``send(_:completion:)`` with a
    /// continuation around it, except that it waits for room in ``budget`` rather than being
    /// refused, validates the request, and runs the retries in the calling task (cancelling it
    /// stops them; a request already with APNs ends with its answer or its timeout).
    ///
    /// - Returns: ``APNSSendResult/delivered(_:)`` on 200, otherwise ``APNSSendResult/rejected(_:)``
    ///   with the last refusal.
    /// - Throws: ``APNSValidationError`` (nothing sent), the transport's error when it gave up,
    ///   ``APNSCredentialError`` when signing fails, `CancellationError`.
    public func send(_ request: APNSRequest) async throws -> APNSSendResult {
        try await send(request, checking: .everything)
    }

    /// ``send(_:)-(APNSRequest)``, validating only what `scope` covers: a fan-out that checked its
    /// template's ``APNSRequest/validateContent()`` once checks each copy's token only
    /// (``APNSRequest/ValidationScope/deviceToken``).
    public func send(_ request: APNSRequest, checking scope: APNSRequest.ValidationScope) async throws -> APNSSendResult
    {
        try request.validate(scope)
        let budget = shared.budget
        // The usual case, room at once, makes no async call.
        if !budget.hasRoom && !budget.isClosed { try await budget.waitForRoom() }
        budget.admitAfterWaiting()
        defer { budget.release() }
        let first = await withUnsafeContinuation { continuation in
            attempt(request) { continuation.resume(returning: $0) }
        }
        switch first {
        case .delivered(let result): return result
        case .retry(let made): return try await sendRetrying(request, first: made)
        }
    }

    /// Sends a device push; `completion` gets the answer (after retries), exactly once.
    ///
    /// The one way a push goes out; ``send(_:)-(APNSRequest)`` awaits the same call. The push is
    /// taken unless ``budget`` already counts its ``APNSSendBudget/Configuration/limit`` pushes
    /// (``APNSSendRefusal/Code/full``) or is closed (``APNSSendRefusal/Code/unavailable``): then
    /// nothing is sent and `completion` is never called. A taken push counts in ``budget`` until
    /// `completion` has returned.
    ///
    /// With a provider token at hand (or certificate credentials), the push goes to the transport
    /// from the calling thread, and a success on the first attempt reaches `completion` on the
    /// transport's I/O thread (so it must not block). Anything else — a token to fetch first, a
    /// refusal or transport error to retry — continues in a task of ``run()`` and reaches
    /// `completion` there: a client that sends this way needs ``run()`` running.
    ///
    /// The request is not validated here (the awaiting form does it): build it valid, as the relay
    /// does, or call ``APNSRequest/validate()`` first.
    public func send(
        _ request: APNSRequest,
        completion: @escaping @Sendable (Result<APNSSendResult, any Error>) -> Void
    ) -> APNSSendRefusal? {
        let shared = self.shared
        let budget = shared.budget
        if let refused = budget.admit() {
            return refused == .full
                ? APNSSendRefusal(.full, reason: "\(budget.configuration.limit) pushes are waiting for APNs")
                : APNSSendRefusal(.unavailable, reason: "new pushes are not taken any more")
        }
        attempt(request) { first in
            switch first {
            case .delivered(let result):
                completion(.success(result))
                budget.release()
            case .retry(let made):
                shared.followUps.enqueue {
                    let client = APNSClient(shared: shared)
                    completion(await Self.result { try await client.sendRetrying(request, first: made) })
                    budget.release()
                }
            }
        }
        return nil
    }

    /// How the first attempt at a push ended.
    enum FirstAttempt: Sendable {
        case delivered(APNSSendResult)
        /// Not delivered (or not tried: no provider token at hand); the retries go on from the
        /// attempt made, if any (``sendRetrying(_:first:)``).
        case retry((APNSAuthorization?, Result<APNSTransportResponse, any Error>)?)
    }

    /// The first attempt of both forms of ``send(_:completion:)``: with the provider token at
    /// hand, straight onto the transport; `next` hears how it ended, once.
    private func attempt(_ request: APNSRequest, next: @escaping @Sendable (FirstAttempt) -> Void) {
        var authorization: APNSAuthorization?
        if let tokenProvider = shared.tokenProvider {
            guard let cached = tokenProvider.cachedAuthorization() else { return next(.retry(nil)) }
            authorization = cached
        }
        let made = authorization
        shared.transport.send(APNSTransportRequest(request, authorizationHeaderValue: made?.headerValue)) { result in
            if case .success(let response) = result, (200..<300).contains(response.status) {
                next(.delivered(.delivered(response.delivery(attempts: 1))))
            } else {
                next(.retry((made, result)))
            }
        }
    }

    /// True when a push sent now goes out at once: a provider token is at hand (or certificate
    /// credentials) and the transport has a live connection (``APNSTransport/isReady``). For a
    /// sender that answers its own caller only once a push is on its way (the relay); otherwise
    /// ``prepare()`` gets there.
    public var isReady: Bool {
        if let tokenProvider = shared.tokenProvider, tokenProvider.cachedAuthorization() == nil { return false }
        return shared.transport.isReady
    }

    /// Fetches a provider token and opens a connection when there is none, so that ``isReady``
    /// holds.
    ///
    /// - Throws: ``APNSCredentialError`` when signing fails; the transport's error when it cannot
    ///   connect (``APNsTransport/APNSConnectionPoolError``); `CancellationError`.
    public func prepare() async throws {
        if let tokenProvider, tokenProvider.cachedAuthorization() == nil { _ = try await tokenProvider.token() }
        try await transport.prepare()
    }

    /// Runs what ``send(_:completion:)`` could not finish at once (token fetches and retries, each
    /// in a child task) until cancelled; then the ones still running are cancelled and awaited.
    /// Work that arrives while it is not running waits for the next call. One call at a time,
    /// from the service that owns the client.
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

/// The retries of pushes sent with a completion whose first answer was not a success, queued for
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
