import CMicroHTTPD
import HTTPRouting
import Synchronization

/// A libmicrohttpd connection pointer that may be carried across threads.
///
/// `@unchecked Sendable` is safe because of how the module uses it: the pointer is dereferenced
/// only by libmicrohttpd, and only in two ways. On the daemon thread that owns the connection
/// (inside the access-handler callback) any call is allowed. From other threads the module only
/// calls `MHD_resume_connection`, which libmicrohttpd documents as thread-safe, and only on a
/// suspended connection: a suspended connection cannot be closed or freed until it is resumed,
/// and ``RequestContext`` lets exactly one party perform that resume.
struct ConnectionHandle: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// What the server knows of one request on its way through libmicrohttpd and back.
///
/// Created when the request line arrives (libmicrohttpd's URI-log callback), passed to the C side
/// as its per-request pointer with a retain, and released in the request-completed callback.
/// Everything except the suspended → resumed transition happens on the connection's daemon
/// thread; the state is behind a `Mutex` all the same, so the class is plainly `Sendable`.
final class RequestContext: Sendable {
    enum Phase: Sendable {
        /// The request line arrived; headers are not yet looked at.
        case awaitingHeaders
        /// Headers accepted; body bytes are being buffered.
        case receiving
        /// The body went over the limit; further bytes are counted and dropped.
        case tooLarge
        /// The request is with the responder, on the I/O thread (``HTTPResponder/respond(to:answer:)``).
        case dispatching
        /// The responder answered before its call returned: the I/O thread sends this at once.
        case answeredAtOnce(HTTPResponse)
        /// The connection is suspended while Swift computes the response.
        case suspended
        /// The connection was resumed with this response (`nil`: abandoned at shutdown, close).
        case resumed(HTTPResponse?)
        /// A response was queued with libmicrohttpd, or the connection was closed.
        case answered
    }

    /// The request as received (method, headers, client), kept until the body is complete.
    struct Head: Sendable {
        var method: String
        var target: RequestTarget
        var path: String
        var headers: HTTPHeaders
        var remoteAddress: String
        /// Who the admission checks found the request to come from (``HTTPRequest/principal``).
        var principal: (any Sendable)?

        /// The request these headers start, with `body` (consuming: the fields move into it).
        /// Only admitted requests get a head (``HTTPResponder/admit(_:)``): the request says so.
        consuming func request(body: consuming [UInt8]) -> HTTPRequest {
            var request = HTTPRequest(
                method: method,
                rawPath: target.rawPath,
                path: path,
                query: target.queryItems,
                headers: headers,
                body: body,
                remoteAddress: remoteAddress
            )
            request.isAdmitted = true
            request.principal = principal
            return request
        }
    }

    struct State: Sendable {
        var phase: Phase = .awaitingHeaders
        var head: Head?
        var body: [UInt8] = []
        /// This request's body limit: its route's, else the server's.
        var bodyLimit = 0
        /// Whether ``bodyLimit`` is its route's own.
        var bodyLimitIsRoutes = false
        var discardedBytes = 0
        /// Whether ``HTTPServerCore`` counts this request as in flight.
        var counted = false
        /// Whether ``HTTPServerCore`` keeps it among the suspended requests (until it completes).
        var wasSuspended = false
        var isHeadRequest = false
    }

    let connection: ConnectionHandle
    /// The request target exactly as received (path and query, still encoded).
    let target: String
    let state = Mutex(State())
    /// Not owned: the server's statistics outlive every request (libmicrohttpd completes each
    /// before the daemon stops, and the server keeps both), and a strong reference was a
    /// retain and a release per request on an object every daemon thread shares.
    private let statistics: Unmanaged<ServerStatistics>

    init(connection: ConnectionHandle, target: String, statistics: Unmanaged<ServerStatistics>) {
        self.connection = connection
        self.target = target
        self.statistics = statistics
        statistics._withUnsafeGuaranteedRef { $0.contextCreated() }
    }

    deinit {
        statistics._withUnsafeGuaranteedRef { $0.contextDestroyed() }
    }

    /// Moves a suspended request to resumed with `response`; `true` when the caller won the
    /// transition and so must call `MHD_resume_connection` (exactly once). A request still with
    /// the responder keeps `response` for the I/O thread to send when the responder returns
    /// (`false`: nothing to resume); any later answer is dropped.
    func resume(with response: HTTPResponse?) -> Bool {
        state.withLock { state in
            switch state.phase {
            case .suspended:
                state.phase = .resumed(response)
                return true
            case .dispatching:
                if let response { state.phase = .answeredAtOnce(response) }
                return false
            default:
                return false
            }
        }
    }
}

/// Counters that outlive one `run()`, for tests and diagnostics. Atomics, not a lock: every
/// request updates them from libmicrohttpd's threads.
final class ServerStatistics: Sendable {
    private let contexts = Atomic<Int>(0)
    private let requestsInFlight = Atomic<Int>(0)
    private let suspensionCount = Atomic<Int>(0)

    /// Request contexts alive now; 0 once every request has completed and been released.
    var liveContexts: Int { contexts.load(ordering: .relaxed) }
    /// Requests whose headers arrived and whose response has not finished.
    var inFlight: Int { requestsInFlight.load(ordering: .sequentiallyConsistent) }

    /// Requests whose connection was suspended because their answer did not come at once.
    var suspensions: Int { suspensionCount.load(ordering: .relaxed) }

    func contextCreated() { contexts.add(1, ordering: .relaxed) }
    func suspended() { suspensionCount.add(1, ordering: .relaxed) }
    func contextDestroyed() { contexts.subtract(1, ordering: .relaxed) }
    /// Sequentially consistent, like ``HTTPServerCore``'s draining flag it is read with.
    func requestEntered() { requestsInFlight.add(1, ordering: .sequentiallyConsistent) }
    /// The count of requests in flight after this one left.
    func requestLeft() -> Int { requestsInFlight.subtract(1, ordering: .sequentiallyConsistent).newValue }
}
