public import APNs
import HTTP2
import HeraldCore

extension APNSConnectionPool {
    // MARK: APNSTransport

    /// Sends `request` on a pooled connection (another one when APNs did not process it) and
    /// returns APNs' response, whatever its status.
    ///
    /// The usual case — a connection with a free stream, a response, nothing to log or close —
    /// runs here with few locals: every request waiting for APNs keeps this function's async
    /// frame, so its size counts once per request in flight. Everything else continues in
    /// ``finishSend(_:from:)``.
    ///
    /// - Throws: ``APNSConnectionPoolError`` when no connection can be had (at once while the
    ///   pool backs off after a failed connect); ``HTTP2/HTTP2Error`` when the request failed on
    ///   its connection (check ``APNSRetryableError/isSafeToRetry``); `CancellationError`.
    public func send(_ request: APNSTransportRequest) async throws -> APNSTransportResponse {
        try Task.checkCancellation()
        // Entering the pool shares the lock with the first acquisition, and leaving it with the
        // release of the response: two lock round trips per request instead of four.
        let (acquired, effects) = locked { state, effects -> PoolState.Acquisition? in
            guard state.enter() else { return nil }
            return state.acquire(mayConnect: true, effects: &effects)
        }
        guard let acquisition = acquired else {
            throw shutDownError
        }
        guard effects.isEmpty, case .use(let id, let connection) = acquisition else {
            return APNSTransportResponse(try await finishSend(request, from: .acquired(acquisition, effects)))
        }
        let response: HTTP2ClientResponse
        do {
            response = try await Self.send(request, on: connection)
        } catch {
            return APNSTransportResponse(try await finishSend(request, from: .failed(id: id, error)))
        }
        let (waiters, after) = release(id, answered: response)
        if let waiters {
            for waiter in waiters { waiter.resume() }
        } else {
            await perform(after)
            leave()
        }
        return APNSTransportResponse(response)
    }

    /// Hands `request` to the least loaded connection that can take it now (see
    /// ``APNSTransport/submit(_:completion:)``), without connecting: refuses when there is none.
    ///
    /// `completion` runs once, on the loop thread of the connection's ``HTTP2/EventLoop`` (on the
    /// calling thread when the connection stopped taking requests in the meantime). A request
    /// that fails on its connection is not sent again here: the error goes to `completion` (the
    /// client's retries send it again, through ``send(_:)``).
    public func submit(
        _ request: APNSTransportRequest,
        completion: @escaping @Sendable (Result<APNSTransportResponse, any Error>) -> Void
    ) -> APNSSendRefusal? {
        let (acquired, effects) = locked(mayAwait: false) { state, effects -> PoolState.Acquisition? in
            guard state.enter() else { return nil }
            let acquisition = state.acquire(mayConnect: false, effects: &effects)
            if case .use = acquisition { return acquisition }
            // Not inside any more; the pool is running, so no shutdown waits for this call.
            _ = state.leave()
            return acquisition
        }
        if !effects.isEmpty { performWithoutWaiting(effects) }
        switch acquired {
        case nil:
            return APNSSendRefusal(.unavailable, reason: shutDownError.description)
        case .use(let id, let connection):
            let handler = PooledRequest(pool: self, connectionID: id, completion: completion)
            switch request.fields {
            case .push(let push, let authorization):
                let fields = APNSRequestHeaderFields(push, authorizationHeaderValue: authorization)
                connection.submit(
                    method: "POST",
                    fieldCount: fields.fieldCount,
                    byteCount: fields.byteCount,
                    body: push.payload,
                    writeFields: { fields.write(into: &$0) },
                    handler: handler
                )
            case .http(let http):
                let size = http.headerBlockSize
                connection.submit(
                    method: http.method,
                    fieldCount: size.fields,
                    byteCount: size.bytes,
                    body: http.body,
                    writeFields: { http.writeHeaderBlock(into: &$0) },
                    handler: handler
                )
            }
            return nil
        case .connect, .wait:
            return APNSSendRefusal(.unavailable, reason: "connecting to \(endpoint.authority)")
        case .fail(let error):
            return APNSSendRefusal(.unavailable, reason: error.description)
        }
    }

    /// Opens a connection when there is none (``warmUp()``).
    public func prepare() async throws {
        try await warmUp()
    }

    // MARK: Internals

    /// A submitted request's answer arrived from connection `id`, on its loop thread.
    fileprivate func answered(
        on id: Int,
        _ result: Result<HTTP2ClientResponse, any Error>,
        completion: @Sendable (Result<APNSTransportResponse, any Error>) -> Void
    ) {
        switch result {
        case .success(let response):
            let (waiters, effects) = release(id, answered: response, mayAwait: false)
            if let waiters {
                for waiter in waiters { waiter.resume() }
            } else {
                performWithoutWaiting(effects)
                leave()
            }
            completion(.success(APNSTransportResponse(response)))
        case .failure(let error):
            let (waiters, effects) = locked(mayAwait: false) { state, effects in
                state.release(id, outcome: .failure(error as? HTTP2Error, final: true), effects: &effects)
                return state.leave()
            }
            if !effects.isEmpty { performWithoutWaiting(effects) }
            for waiter in waiters { waiter.resume() }
            completion(.failure(error))
        }
    }

    /// Sends `request` on `connection` and waits for its response.
    @inline(__always)
    private static func send(
        _ request: APNSTransportRequest,
        on connection: HTTP2ClientConnection
    ) async throws -> HTTP2ClientResponse {
        switch request.fields {
        case .push(let push, let authorization):
            let fields = APNSRequestHeaderFields(push, authorizationHeaderValue: authorization)
            return try await connection.send(
                method: "POST",
                fieldCount: fields.fieldCount,
                byteCount: fields.byteCount,
                body: push.payload
            ) { fields.write(into: &$0) }
        case .http(let http):
            return try await connection.send(
                method: http.method,
                fieldCount: http.headerBlockSize.fields,
                byteCount: http.headerBlockSize.bytes,
                body: http.body
            ) { http.writeHeaderBlock(into: &$0) }
        }
    }

    /// Records that connection `id` answered `response`, and leaves the pool in the same lock
    /// when that has no effects: then the drain waiters to resume come back; otherwise `nil` and
    /// the effects, to perform before ``leave()``.
    private func release(
        _ id: Int,
        answered response: HTTP2ClientResponse,
        mayAwait: Bool = true
    ) -> ([CheckedContinuation<Void, Never>]?, PoolState.Effects) {
        let status = response.status
        return locked(mayAwait: mayAwait) { state, effects -> [CheckedContinuation<Void, Never>]? in
            state.release(
                id,
                outcome: .response(status: status, body: status == 503 ? response.body : []),
                effects: &effects
            )
            return effects.isEmpty ? state.leave() : nil
        }
    }

    /// Where ``send(_:)`` stands when it hands over to ``finishSend(_:from:)`` (it has entered
    /// the pool either way).
    private enum SendStep {
        /// What the first acquisition returned, with effects to perform.
        case acquired(PoolState.Acquisition, PoolState.Effects)
        /// The request failed on connection `id`.
        case failed(id: Int, any Error)
    }

    /// The rest of a send that did not go straight through: connecting or waiting for a connect,
    /// sending again on another connection after a lost one, performing effects. Leaves the pool
    /// when done.
    @inline(never)
    private func finishSend(_ request: APNSTransportRequest, from step: SendStep) async throws -> HTTP2ClientResponse {
        defer { leave() }
        // A send starts or waits for at most a few connects, and none after one failed: then it
        // fails (or queues on a connection it can still use) rather than wait again.
        var connects = 0
        var connectFailed = false
        var resends = 0
        var next: SendStep? = step
        while true {
            let acquisition: PoolState.Acquisition
            switch next {
            case .acquired(let first, let effects):
                next = nil
                if !effects.isEmpty { await perform(effects) }
                acquisition = first
            case .failed(let id, let error):
                next = nil
                try await requestFailed(on: id, error, resends: &resends)
                continue
            case nil:
                try Task.checkCancellation()
                let mayConnect = !connectFailed && connects < Self.maximumConnectsPerSend
                let (acquired, effects) = locked { state, effects in
                    state.acquire(mayConnect: mayConnect, effects: &effects)
                }
                if !effects.isEmpty { await perform(effects) }
                acquisition = acquired
            }
            switch acquisition {
            case .use(let id, let connection):
                let response: HTTP2ClientResponse
                do {
                    response = try await Self.send(request, on: connection)
                } catch {
                    next = .failed(id: id, error)
                    continue
                }
                let outcome = PoolState.Outcome.response(
                    status: response.status,
                    body: response.status == 503 ? response.body : []
                )
                let (_, effects) = locked { state, effects in state.release(id, outcome: outcome, effects: &effects) }
                if !effects.isEmpty { await perform(effects) }
                return response
            case .connect(let attempt), .wait(let attempt):
                if case .connect = acquisition { await connect(attempt) }
                switch try await attempt.wait() {
                case .connected: connects += 1
                case .failed: connectFailed = true
                case .cancelled: break
                }
            case .fail(let error):
                throw error
            }
        }
    }

    /// Records a request that failed on connection `id`; returns when it should be sent again
    /// (on another connection), throws `error` when not.
    private func requestFailed(on id: Int, _ error: any Error, resends: inout Int) async throws {
        let resend = resends < Self.maximumResends && (error as? HTTP2Error).map(Self.isResendable) == true
        let (_, effects) = locked { state, effects in
            state.release(id, outcome: .failure(error as? HTTP2Error, final: !resend), effects: &effects)
        }
        if !effects.isEmpty { await perform(effects) }
        guard resend else { throw error }
        resends += 1
        logger.debug(
            "apns request not processed; sending it on another connection",
            metadata: ["endpoint": .string(endpoint.description), "error": .string("\(error)")]
        )
    }
}

/// A submitted request on its connection: where its answer goes. The connection calls
/// ``responseArrived(_:)`` once, on its loop thread.
private final class PooledRequest: HTTP2ResponseHandler {
    let pool: APNSConnectionPool
    let connectionID: Int
    let completion: @Sendable (Result<APNSTransportResponse, any Error>) -> Void

    init(
        pool: APNSConnectionPool,
        connectionID: Int,
        completion: @escaping @Sendable (Result<APNSTransportResponse, any Error>) -> Void
    ) {
        self.pool = pool
        self.connectionID = connectionID
        self.completion = completion
    }

    func responseArrived(_ result: Result<HTTP2ClientResponse, any Error>) {
        pool.answered(on: connectionID, result, completion: completion)
    }
}
