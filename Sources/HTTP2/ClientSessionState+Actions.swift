/// What a ``ClientSessionState`` hands out: its actions, its status, its errors and the settings
/// the connection announces.
extension ClientSessionState {
    /// Why a request ended without a response.
    enum Failure {
        case cancelled
        case error(HTTP2Error)
    }

    /// What the shell does for the events it fed in, in order.
    enum Action {
        /// Answer the request's waiter with the response its stream received.
        case succeed(Request)
        /// Answer the request's waiter with an error.
        case fail(Request, Failure)
        /// Send RST_STREAM(CANCEL) on the stream.
        case resetStream(Int32)
        /// Fail new submissions at once with this error and drain the inbox now.
        case rejectNewRequests(HTTP2Error)
        /// The connection is done: reject new requests, stop the timers, close the channel and
        /// drop the nghttp2 session on a later loop iteration, keeping `retired` alive until then.
        case closeConnection(Closing)
    }

    /// How the connection ends.
    struct Closing {
        var error: HTTP2Error
        /// Flush and close (after a GOAWAY of our own) rather than abort.
        var graceful: Bool
        /// Counts in the connection-failure metric (a close that was asked for does not).
        var isFailure: Bool
        /// Requests nghttp2 may still point at.
        var retired: [Request]
    }

    /// What the PING timer should do.
    enum PingDecision: Equatable {
        /// Send a PING, fail the connection if it is not answered by the timeout, check again at
        /// the time given.
        case sendPing(nextCheck: UInt64)
        /// Heard from the peer recently (or a PING is out): check again at the time given.
        case checkAgain(at: UInt64)
        /// Not pinging (closed, or not connected yet).
        case stop
    }

    // MARK: header limits

    /// The largest response header list the client takes, per stream, all its header blocks
    /// (informational responses, the final one, trailers) together: 64 KiB, announced as
    /// SETTINGS_MAX_HEADER_LIST_SIZE. APNs and CloudKit send a few hundred bytes.
    static var maximumHeaderListSize: Int { 65_536 }

    /// CONTINUATION frames allowed after one HEADERS frame (nghttp2's own default, made explicit):
    /// with 16 KiB frames, room for a 64 KiB header list sent without compression.
    static var maximumContinuations: Int { 8 }

    /// One field's share of a header list as RFC 9113 §6.5.2 counts it for
    /// SETTINGS_MAX_HEADER_LIST_SIZE: name and value octets, uncompressed, plus 32.
    static func headerFieldSize(nameLength: Int, valueLength: Int) -> Int {
        nameLength + valueLength + 32
    }

    /// Which header limit the peer broke.
    enum HeaderListExcess: Equatable, CustomStringConvertible {
        /// More than `limit` bytes of header fields on one stream.
        case bytes(limit: Int)
        /// A header block in more than `limit` CONTINUATION frames.
        case continuations(limit: Int)

        var description: String {
            switch self {
            case .bytes(let limit):
                "a response header list over \(limit) bytes (SETTINGS_MAX_HEADER_LIST_SIZE)"
            case .continuations(let limit): "a header block in more than \(limit) CONTINUATION frames"
            }
        }
    }

    // MARK: flow control

    /// Output above this many unwritten bytes stays in nghttp2 until the socket drains: nghttp2's
    /// flow control and the peer's windows bound the rest.
    static var outputHighWater: Int { 1 << 20 }

    /// Whether to pull more frames out of nghttp2 with `pendingWriteBytes` not yet written.
    static func mayPullOutput(pendingWriteBytes: Int) -> Bool {
        pendingWriteBytes < outputHighWater
    }

    /// The SETTINGS the client sends first (ids as in RFC 9113 §6.5.2: no server push, the
    /// stream receive window, no streams opened by the server, the largest header list it
    /// takes), and the connection receive window to announce (nil: the protocol's default of
    /// 65,535 bytes).
    static func localSettings(
        initialStreamWindowSize: Int,
        connectionWindowSize: Int
    ) -> (settings: [(id: UInt32, value: UInt32)], connectionWindow: Int32?) {
        let settings: [(id: UInt32, value: UInt32)] = [
            (0x2, 0),
            (0x4, UInt32(clamping: initialStreamWindowSize)),
            (0x3, 0),
            (0x6, UInt32(maximumHeaderListSize)),
        ]
        return (settings, connectionWindowSize > 65_535 ? Int32(clamping: connectionWindowSize) : nil)
    }

    // MARK: status

    /// The stream limit in force: the peer's, capped by the configuration.
    var streamLimit: Int { min(remoteMaxConcurrentStreams, maximumConcurrentStreams) }

    var status: HTTP2ClientConnection.Status {
        var status = HTTP2ClientConnection.Status()
        status.isUsable = phase == .ready && !closeRequested
        status.isClosed = phase == .closed
        if phase != .closed { status.maxConcurrentStreams = streamLimit }
        status.activeStreams = openCount
        status.queuedRequests = queuedCount
        status.goAway = goAway
        status.failure = phase == .closed ? failure : nil
        return status
    }

    func goAwayError(safeToRetry: Bool) -> HTTP2Error {
        let goAway = goAway ?? HTTP2GoAway(lastStreamID: 0, errorCode: .noError, debugData: [])
        var message = "the server sent GOAWAY (\(goAway.errorCode)"
        if let reason = goAway.reason {
            message += ", reason \(reason)"
        } else if !goAway.debugData.isEmpty {
            message += ", \(goAway.debugText)"
        }
        message += ")"
        message += safeToRetry ? "; the request was not processed" : ""
        return HTTP2Error(
            code: .goAway,
            isSafeToRetry: safeToRetry,
            message: message,
            goAway: goAway,
            errorCode: goAway.errorCode
        )
    }

    static func timeoutError(safeToRetry: Bool) -> HTTP2Error {
        HTTP2Error(
            code: .requestTimeout,
            isSafeToRetry: safeToRetry,
            message: safeToRetry
                ? "the request timed out before it was sent" : "the request timed out waiting for the response"
        )
    }
}
