public import Foundation
public import HeraldCore

/// What one push's answer means to whoever sent it: the one classification of results that
/// notifications, Live Activities and wake pings share.
public enum APNSPushOutcome: Sendable {
    /// APNs accepted the push.
    case sent(APNSDelivery)
    /// APNs called the device token dead (`BadDeviceToken`, `Unregistered`, a 410): since its
    /// timestamp, or since the answer when it gave none.
    case dead(APNSRejection, since: Date)
    /// Not taken for now (429, 5xx, an expired provider token, no connection after the client's
    /// own retries): a later attempt may succeed.
    case retry(APNSPushFailure)
    /// Refused for a reason another attempt cannot fix: APNs' refusal, or a request Herald's own
    /// validation refused before sending it.
    case rejected(APNSPushFailure)
    /// The sending task was cancelled before APNs answered: nothing is known about this push.
    case cancelled

    /// Classifies a send's result; `now` dates a dead token APNs gave no timestamp for.
    public init(_ result: Result<APNSSendResult, any Error>, now: Date) {
        switch result {
        case .success(.delivered(let delivery)):
            self = .sent(delivery)
        case .success(.rejected(let rejection)):
            if rejection.isDeviceTokenInvalid {
                self = .dead(rejection, since: rejection.response.timestamp ?? now)
            } else if rejection.category == .retryable || rejection.category == .providerTokenExpired {
                self = .retry(APNSPushFailure(rejection))
            } else {
                self = .rejected(APNSPushFailure(rejection))
            }
        case .failure(let error as APNSValidationError):
            self = .rejected(APNSPushFailure(reason: error.message, attempts: 0, rejection: nil))
        case .failure(is CancellationError):
            self = .cancelled
        case .failure(let error):
            self = .retry(APNSPushFailure(reason: String(describing: error), attempts: 1, rejection: nil))
        }
    }
}

/// Why a push was not sent: APNs' refusal, or the error that kept it from APNs.
public struct APNSPushFailure: Sendable {
    /// APNs' reason (`TooManyRequests`), or the error's description.
    public var reason: String
    /// Requests made, the client's own retries included (0: never sent).
    public var attempts: Int
    /// APNs' answer, when it answered.
    public var rejection: APNSRejection?

    public init(reason: String, attempts: Int, rejection: APNSRejection?) {
        self.reason = reason
        self.attempts = attempts
        self.rejection = rejection
    }

    init(_ rejection: APNSRejection) {
        self.init(reason: rejection.reason.rawValue, attempts: rejection.attempts, rejection: rejection)
    }
}

/// A push's answer: what the client returned and what it means.
public struct APNSPushAnswer: Sendable {
    public var result: Result<APNSSendResult, any Error>
    public var outcome: APNSPushOutcome
}

/// Sends a set of pushes with at most ``maximumInFlight`` waiting for APNs at once: the one
/// fan-out of notifications, Live Activity updates and starts, and wake pings.
///
/// The pushes come from `next`, asked whenever there is room (it may read a page, wait for a
/// jitter slot, or claim devices); each answer goes to `answered`, one at a time on the caller's
/// task, in the order APNs answers. While `answered` waits (a writer that fell behind), nothing
/// new is sent, so memory stays bounded at any audience size. A sender that writes each result
/// gives `settle` instead (``run(next:send:settle:answered:)``): it runs on the push's own task,
/// concurrently for the pushes answered together, and the push keeps its slot until it returns.
/// Once the task is cancelled, nothing new is sent and the pushes in flight are answered
/// `cancelled` unless APNs answered first.
public struct APNSFanOut: Sendable {
    /// Pushes sent and not yet answered, at most.
    public var maximumInFlight: Int
    /// Dates a dead token's answer that carries no timestamp.
    public var clock: any HeraldClock

    public init(maximumInFlight: Int, clock: any HeraldClock) {
        self.maximumInFlight = max(1, maximumInFlight)
        self.clock = clock
    }

    /// Sends what `next` hands out until it returns `nil`, and hands every answer to `answered`.
    ///
    /// When `next` throws, nothing more is sent, the pushes in flight are still answered (so
    /// that what reached APNs is recorded), then the error is thrown. When `answered` throws,
    /// the pushes in flight are cancelled and the error is thrown.
    public func run<Push: Sendable>(
        next: () async throws -> Push?,
        send: @escaping @Sendable (Push) async throws -> APNSSendResult,
        answered: (Push, APNSPushAnswer) async throws -> Void
    ) async throws {
        try await run(next: next, send: send, settle: { _, answer in answer }, answered: answered)
    }

    /// Sends what `next` hands out until it returns `nil`; each push's task hands its answer to
    /// `settle` (to write its result, say) and its slot is free only once `settle` returns, then
    /// what `settle` returned goes to `answered`. A slow `settle` thus holds new sends back, and
    /// the pushes answered meanwhile settle concurrently (a ``GroupCommit`` gathers their writes).
    ///
    /// `settle` also runs for a push answered `cancelled`, and after the task is cancelled: work
    /// it must finish (a result APNs has) ignores cancellation. When `next` throws, nothing more is
    /// sent, the pushes in flight are still answered and settled, then the error is thrown. When
    /// `settle` or `answered` throws, the pushes in flight are cancelled and the error is thrown.
    public func run<Push: Sendable, Settled: Sendable>(
        next: () async throws -> Push?,
        send: @escaping @Sendable (Push) async throws -> APNSSendResult,
        settle: @escaping @Sendable (Push, APNSPushAnswer) async throws -> Settled,
        answered: (Push, Settled) async throws -> Void
    ) async throws {
        let clock = self.clock
        try await withThrowingTaskGroup(of: (Push, Settled).self) { group in
            var inFlight = 0
            var exhausted = false
            var failure: (any Error)?
            while true {
                while !exhausted, inFlight < maximumInFlight, !Task.isCancelled {
                    let push: Push?
                    do {
                        push = try await next()
                    } catch {
                        failure = error
                        push = nil
                    }
                    guard let push else {
                        exhausted = true
                        break
                    }
                    inFlight += 1
                    group.addTask { (push, try await settle(push, await Self.answer(push, send, clock: clock))) }
                }
                guard inFlight > 0, let (push, settled) = try await group.next() else { break }
                inFlight -= 1
                try await answered(push, settled)
            }
            if let failure { throw failure }
        }
    }

    /// Sends every push of `pushes` and returns their answers in the pushes' order.
    public func send<Push: Sendable>(
        _ pushes: [Push],
        _ send: @escaping @Sendable (Push) async throws -> APNSSendResult
    ) async throws -> [APNSPushAnswer] {
        // Most Live Activity updates go to one instance: no task group for them.
        if pushes.count == 1 { return [await Self.answer(pushes[0], send, clock: clock)] }
        var answers = [APNSPushAnswer?](repeating: nil, count: pushes.count)
        var index = 0
        try await run(
            next: { () -> (Int, Push)? in
                guard index < pushes.count else { return nil }
                defer { index += 1 }
                return (index, pushes[index])
            },
            send: { try await send($0.1) },
            answered: { answers[$0.0] = $1 }
        )
        return answers.map {
            $0 ?? APNSPushAnswer(result: .failure(CancellationError()), outcome: .cancelled)
        }
    }

    /// Sends one push and reads its answer; an error after the task was cancelled is `cancelled`.
    private static func answer<Push: Sendable>(
        _ push: Push,
        _ send: @Sendable (Push) async throws -> APNSSendResult,
        clock: any HeraldClock
    ) async -> APNSPushAnswer {
        let result: Result<APNSSendResult, any Error>
        do {
            result = .success(try await send(push))
        } catch {
            result = .failure(Task.isCancelled ? CancellationError() : error)
        }
        return APNSPushAnswer(result: result, outcome: APNSPushOutcome(result, now: clock.now()))
    }
}
