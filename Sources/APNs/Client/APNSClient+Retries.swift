import HeraldCore

extension APNSClient {
    /// A send's end: the answer it stopped at and how many requests it took.
    enum Outcome {
        case success(APNSTransportResponse, attempts: Int)
        case failure(APNSErrorResponse, attempts: Int)
    }

    /// The retries of a device push whose first attempt was made already.
    @inline(never)
    func sendRetrying(
        _ request: APNSRequest,
        first: (APNSAuthorization?, Result<APNSTransportResponse, any Error>)?
    ) async throws -> APNSSendResult {
        let transport = self.transport
        return try await result(
            perform(label: request.pushType.headerValue, policy: retryPolicy, first: first) {
                try await transport.send(APNSTransportRequest(request, authorizationHeaderValue: $0?.headerValue))
            }
        )
    }

    func result(_ outcome: Outcome) -> APNSSendResult {
        switch outcome {
        case .success(let response, let attempts): .delivered(response.delivery(attempts: attempts))
        case .failure(let response, let attempts): .rejected(APNSRejection(response: response, attempts: attempts))
        }
    }

    /// Sends with `send` until a success, a refusal not worth retrying, or a transport error the
    /// policy gives up on.
    ///
    /// - Parameter first: the first attempt when the caller already made it (its authorization and
    ///   result); the loop continues from there.
    func perform(
        label: String,
        policy: APNSRetryPolicy,
        first: (APNSAuthorization?, Result<APNSTransportResponse, any Error>)? = nil,
        _ send: (APNSAuthorization?) async throws -> APNSTransportResponse
    ) async throws -> Outcome {
        var attempt = 1
        var sent = 0
        var rejectedToken: (token: String, response: APNSErrorResponse)?
        var first = first
        while true {
            let authorization: APNSAuthorization?
            let result: Result<APNSTransportResponse, any Error>
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
            let response: APNSTransportResponse
            switch result {
            case .success(let answer):
                response = answer
            case .failure(let error):
                switch shared.random.use({ policy.decision(afterTransportError: error, attempt: attempt, using: &$0) })
                {
                case .retry(let delay):
                    logger.debug(
                        "apns transport error, retrying",
                        metadata: [
                            "kind": .string(label), "attempt": .int(attempt), "delay_ms": .int(delay.milliseconds),
                        ]
                    )
                    try await shared.clock.sleep(for: delay)
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
            switch shared.random.use({ policy.decision(after: failure, attempt: attempt, using: &$0) }) {
            case .retry(let delay):
                logger.debug(
                    "apns refused, retrying",
                    metadata: [
                        "kind": .string(label), "status": .int(failure.status),
                        "reason": .string(failure.reason.metricLabel), "attempt": .int(attempt),
                        "delay_ms": .int(delay.milliseconds),
                    ]
                )
                try await shared.clock.sleep(for: delay)
                attempt += 1
            case .giveUp:
                return .failure(failure, attempts: sent)
            }
        }
    }
}

extension Duration {
    fileprivate var milliseconds: Int {
        let (seconds, attoseconds) = components
        return Int(seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }
}
