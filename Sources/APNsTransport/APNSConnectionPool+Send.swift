public import APNs
import HTTP2
import HeraldCore

extension APNSConnectionPool {
    // MARK: APNSTransport

    /// Sends `request` on a pooled connection; `completion` gets APNs' response, whatever its
    /// status, or the error (see ``APNSTransport/send(_:completion:)``).
    ///
    /// The usual case — a connection with a free stream — hands the request to that connection
    /// from the calling thread, with no task: `completion` then runs on the connection's loop
    /// thread. A request that must wait for a connect, or that APNs did not process on a lost
    /// connection and goes to another one (up to three times), continues in a task of the pool's
    /// (``finishSend(_:from:)``), and `completion` runs there.
    ///
    /// Errors: ``APNSConnectionPoolError`` when no connection can be had (at once while the pool
    /// backs off after a failed connect, or once it is shut down); ``HTTP2/HTTP2Error`` when the
    /// request failed on its connection (check ``APNSRetryableError/isSafeToRetry``).
    public func send(
        _ request: APNSTransportRequest,
        completion: @escaping @Sendable (Result<APNSTransportResponse, any Error>) -> Void
    ) {
        let (acquired, effects) = locked(mayAwait: false) { state, effects -> PoolState.Acquisition? in
            guard state.enter() else { return nil }
            return state.acquire(mayConnect: true, effects: &effects)
        }
        guard let acquisition = acquired else {
            completion(.failure(shutDownError))
            return
        }
        if !effects.isEmpty { performWithoutWaiting(effects) }
        guard case .use(let id, let connection) = acquisition else {
            finishInTask(request, from: .acquired(acquisition, PoolState.Effects()), completion: completion)
            return
        }
        let handler = PooledRequest(pool: self, connectionID: id, request: request, completion: completion)
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
    }

    /// True while a connection takes requests: a request sent now goes out at once.
    public var isReady: Bool {
        locked(mayAwait: false) { state, _ in state.hasUsableConnection }.0
    }

    /// Opens a connection when there is none (``warmUp()``).
    public func prepare() async throws {
        try await warmUp()
    }

    // MARK: Internals

    /// A request's answer arrived from connection `id`, on its loop thread.
    fileprivate func answered(
        on id: Int,
        _ result: Result<HTTP2ClientResponse, any Error>,
        request: APNSTransportRequest,
        completion: @escaping @Sendable (Result<APNSTransportResponse, any Error>) -> Void
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
        case .failure(let error as HTTP2Error) where Self.isResendable(error):
            // APNs did not process it: another connection, from a task (it may have to connect).
            finishInTask(request, from: .failed(id: id, error), completion: completion)
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

    /// Runs the rest of a send that could not go straight onto a connection in a task, and hands
    /// its end to `completion`. The send is inside the pool, so a shutdown waits for the task.
    private func finishInTask(
        _ request: APNSTransportRequest,
        from step: SendStep,
        completion: @escaping @Sendable (Result<APNSTransportResponse, any Error>) -> Void
    ) {
        // Unstructured: nothing awaits a sent request but its completion; the pool counts the task
        // in (it entered), and `shutdown()` waits for it to leave.
        Task {
            do {
                completion(.success(APNSTransportResponse(try await finishSend(request, from: step))))
            } catch {
                completion(.failure(error))
            }
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

    /// Where a send stands when it hands over to ``finishSend(_:from:)`` (it has entered
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

/// A request on its connection: where its answer goes. The connection calls
/// ``responseArrived(_:)`` once, on its loop thread.
private final class PooledRequest: HTTP2ResponseHandler {
    let pool: APNSConnectionPool
    let connectionID: Int
    /// Kept for a resend when APNs did not process it.
    let request: APNSTransportRequest
    let completion: @Sendable (Result<APNSTransportResponse, any Error>) -> Void

    init(
        pool: APNSConnectionPool,
        connectionID: Int,
        request: APNSTransportRequest,
        completion: @escaping @Sendable (Result<APNSTransportResponse, any Error>) -> Void
    ) {
        self.pool = pool
        self.connectionID = connectionID
        self.request = request
        self.completion = completion
    }

    func responseArrived(_ result: Result<HTTP2ClientResponse, any Error>) {
        pool.answered(on: connectionID, result, request: request, completion: completion)
    }
}
