import APNs
import HTTPRouting
import HeraldCore
import Synchronization

extension RelayService {
    /// A relay request after validation and translation: its final answer, or a push to send.
    enum Validation {
        case answered(HTTPResponse)
        case push(RelayedPush, via: APNSClient)
    }

    /// Answers one relay request through `answer`: at once whenever it can decide so (bad input,
    /// or a push handed to a live APNs connection with room in the budget). A push that must wait
    /// for room waits as a callback in the budget (first come, first served), no task, and is
    /// answered 202 once it is sent, or 503 when the relay shuts down first or no connection can
    /// take it then; only a push that needs a connection first takes a task
    /// (``connectAndSend(_:via:)``).
    ///
    /// Runs on the HTTP server's I/O thread; never blocks. The push goes out from this thread, and
    /// APNs' answer is handled on the connection's I/O thread. A push that waited is answered on
    /// the thread that made room: an APNs connection's I/O thread, where an answered push was
    /// released.
    func relay(_ request: HTTPRequest, answer: HTTPResponseSink) {
        let (push, client): (RelayedPush, APNSClient)
        switch validate(request) {
        case .answered(let response): return answer(response)
        case .push(let validated, let validatedClient): (push, client) = (validated, validatedClient)
        }
        if client.budget.hasRoom || stopping.load(ordering: .relaxed), let response = send(push, via: client) {
            return answer(response)
        }
        let known = client.budget.waitForRoom { [self] outcome in
            answer(afterWaiting(outcome, push, via: client))
        }
        switch known {
        case nil:
            return
        case .closed?:
            answer(afterWaiting(.closed, push, via: client))
        case .room?:
            if let response = send(push, via: client) { return answer(response) }
            answer.answer(by: { [self] in await connectAndSend(push, via: client) })
        }
    }

    /// The answer to a request whose push waited for room: sent (202), or 503.
    private func afterWaiting(
        _ outcome: APNSSendBudget.WaitOutcome,
        _ push: RelayedPush,
        via client: APNSClient
    ) -> HTTPResponse {
        if outcome == .room, let response = send(push, via: client) { return response }
        count(push.encoding, status: 503)
        if outcome == .closed || stopping.load(ordering: .sequentiallyConsistent) {
            return unavailable("the relay is shutting down")
        }
        return unavailable("APNs (\(push.environment)) cannot be reached right now")
    }

    /// Sends a validated push that no APNs connection could take at once: waits for a
    /// connection, then for room.
    private func connectAndSend(_ push: RelayedPush, via client: APNSClient) async -> HTTPResponse {
        if client.budget.hasRoom, let response = send(push, via: client) { return response }
        do {
            try await client.prepare()
            try await client.budget.waitForRoom()
        } catch {
            count(push.encoding, status: 503)
            if let suppressed = refusalLog.admit("apns_unreachable") {
                logger.warning(
                    "relay answered 503: APNs unreachable",
                    metadata: [
                        "environment": .string("\(push.environment)"), "error": .string("\(error)"),
                        "suppressed": .int(suppressed),
                    ]
                )
            }
            return unavailable("APNs (\(push.environment)) cannot be reached right now")
        }
        if let response = send(push, via: client) { return response }
        count(push.encoding, status: 503)
        return unavailable("APNs (\(push.environment)) cannot be reached right now")
    }

    /// Validates and translates; counts and answers what can be answered without APNs.
    func validate(_ request: HTTPRequest) -> Validation {
        let (rawToken, rawID) = Self.rawSegments(request)
        let push: RelayedPush
        do {
            push = try translation.translate(rawToken: rawToken, rawID: rawID, request: request, now: clock.now())
        } catch {
            count(error.encoding, status: error.status)
            return .answered(.error(status: error.status, code: error.code, message: error.message))
        }
        if push.request.payload.count > push.request.pushType.maxPayloadSize {
            // A 4xx would make Mastodon delete the subscription over one long message (RELAY.md).
            oversize.increment()
            if let suppressed = refusalLog.admit("oversize") {
                logger.warning(
                    "relay body too large for APNs: not sent",
                    metadata: [
                        "token": .string(APNSDeviceToken.shortened(push.request.deviceToken)),
                        "apns_payload_bytes": .int(push.request.payload.count),
                        "suppressed": .int(suppressed),
                    ]
                )
            }
            count(push.encoding, status: 202)
            return .answered(HTTPResponse(status: 202))
        }
        guard let client = clients[push.environment] else {
            count(push.encoding, status: 503)
            return .answered(unavailable("no APNs credentials for the \(push.environment) environment"))
        }
        return .push(push, via: client)
    }

    /// Hands `push` to `client`: 202 when taken, 503 when the relay is shutting down or the
    /// budget is full, `nil` (nothing sent, nothing counted) when no live connection could take it
    /// now: RELAY.md's 202 means "on a live APNs connection", so the caller connects first.
    private func send(_ push: RelayedPush, via client: APNSClient) -> HTTPResponse? {
        if stopping.load(ordering: .sequentiallyConsistent) {
            count(push.encoding, status: 503)
            return unavailable("the relay is shutting down")
        }
        guard client.isReady else { return nil }
        // Only what the answer's log line needs: the push itself is the client's now.
        let (token, environment) = (push.request.deviceToken, push.environment)
        let refusal = client.send(push.request) { [self] result in
            record(result, token: token, environment: environment)
        }
        guard let refusal else {
            count(push.encoding, status: 202)
            return HTTPResponse(status: 202)
        }
        count(push.encoding, status: 503)
        if refusal.code == .full { return unavailable("too many pushes are waiting for APNs") }
        return unavailable("the relay is shutting down")
    }

    func unavailable(_ message: String) -> HTTPResponse {
        var response = HTTPResponse.error(status: 503, code: "apns_unavailable", message: message + "; retry later")
        response.headers.replaceOrAdd(name: "Retry-After", value: String(configuration.retryAfterSeconds))
        return response
    }

    func count(_ encoding: String, status: Int) {
        switch (encoding, status) {
        case ("aes128gcm", 202): accepted.aes128gcm.increment()
        case ("aesgcm", 202): accepted.aesgcm.increment()
        default: relayRequests.increment(labels: [("encoding", encoding), ("status", String(status))])
        }
    }

    /// The `device_token` and `id` path segments as received (still percent-encoded).
    static func rawSegments(_ request: HTTPRequest) -> (token: String, id: String) {
        // Without an escape in the path, the router's decoded parameters are the raw segments.
        if !request.rawPath.utf8Contains(UInt8(ascii: "%")), let token = request.parameters["token"],
            let id = request.parameters["id"]
        {
            return (token, id)
        }
        let segments = request.rawPath.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        // ["", "push", token, id]: the router matched exactly four segments.
        guard segments.count == 4 else { return ("", "") }
        return (String(Substring(segments[2])), String(Substring(segments[3])))
    }

}
