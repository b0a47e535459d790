import CMicroHTTPD
import Foundation
import HTTPRouting
import HeraldCore
import Synchronization

/// The part of a running server that libmicrohttpd's callbacks reach (through `Unmanaged`, as
/// their `cls`): it buffers uploads, enforces limits, suspends connections and hands requests
/// to Swift, and turns responses back into libmicrohttpd responses.
///
/// Callbacks run on libmicrohttpd's threads and never block: they take short locks and yield to
/// an `AsyncStream`. Each complete request goes to the responder on that thread
/// (``HTTPResponder/respond(to:answer:)``): one it answers before returning is sent
/// right there, without suspending its connection; one it answers later (from a callback, or a
/// task it starts in `run()`'s task group) is suspended and resumed from the thread that answers.
final class HTTPServerCore: Sendable {
    struct Limits: Sendable {
        var maxBodySize: Int
        var maxBodySizeSetting: String?
        var maxHeaderSize: Int
        /// How many bytes past `maxBodySize` a chunked upload may send before the connection is
        /// closed without an answer (below it, the client gets its 413).
        var discardAllowance: Int
    }

    /// What suspended requests need; requests answered at once never take this lock.
    private struct State {
        /// No new request may be suspended: the daemon is about to stop.
        var closed = false
        var suspended: [ObjectIdentifier: RequestContext] = [:]
    }

    let limits: Limits
    /// The total deadline for receiving each request; `nil`: none.
    let deadlines: RequestDeadlines?
    let logger: Logger
    let statistics: ServerStatistics
    /// `statistics` for request contexts, which must not retain it (see ``RequestContext``).
    private let unmanagedStatistics: Unmanaged<ServerStatistics>
    private let responder: any HTTPResponder
    private let events: AsyncStream<ServerEvent>.Continuation
    private let state = Mutex(State())
    /// Atomics rather than fields of `state`: every request counts itself in and out, from
    /// several daemon threads, and a shared lock for that was one more contended cache line.
    private let draining = Atomic<Bool>(false)
    private let drainSignalled = Atomic<Bool>(false)
    /// Set once `MHD_start_daemon` returned: libmicrohttpd messages before that are start-up
    /// errors (logged at `error`), after it mostly reports of misbehaving clients (`debug`).
    private let started = Atomic<Bool>(false)
    /// The last message libmicrohttpd logged, to explain a failed start.
    private let lastDaemonMessage = Mutex<String?>(nil)

    init(
        limits: Limits,
        deadlines: RequestDeadlines?,
        logger: Logger,
        statistics: ServerStatistics,
        responder: any HTTPResponder,
        events: AsyncStream<ServerEvent>.Continuation
    ) {
        self.limits = limits
        self.deadlines = deadlines
        self.logger = logger
        self.statistics = statistics
        self.unmanagedStatistics = Unmanaged.passUnretained(statistics)
        self.responder = responder
        self.events = events
    }

    /// Signals `.drained` once, the first time draining finds nothing in flight.
    private func signalDrainedOnce() {
        if !drainSignalled.exchange(true, ordering: .sequentiallyConsistent) { events.yield(.drained) }
    }

    // MARK: Lifecycle, called from HTTPServer.run()

    func markStarted() {
        started.store(true, ordering: .releasing)
    }

    var lastMessage: String? { lastDaemonMessage.withLock { $0 } }

    /// Starts draining: responses now close their connections. `true` when nothing is in flight
    /// (and `.drained` will not be signalled); otherwise the last request out signals it.
    func beginDraining() -> Bool {
        // Sequentially consistent with the request count: either this sees the last request
        // leave, or that request sees draining set.
        draining.store(true, ordering: .sequentiallyConsistent)
        guard statistics.inFlight == 0 else { return false }
        return !drainSignalled.exchange(true, ordering: .sequentiallyConsistent)
    }

    /// Refuses further suspensions and resumes every suspended connection without a response
    /// (libmicrohttpd then closes it), so that `MHD_stop_daemon` finds none suspended.
    func close() {
        draining.store(true, ordering: .sequentiallyConsistent)
        let abandoned = state.withLock { state in
            state.closed = true
            defer { state.suspended = [:] }
            return Array(state.suspended.values)
        }
        for context in abandoned where context.resume(with: nil) {
            MHD_resume_connection(context.connection.pointer)
        }
        if !abandoned.isEmpty {
            logger.warning("stopping: dropping requests still unanswered", metadata: ["count": .int(abandoned.count)])
        }
    }

    /// The response for the responder's answer: a failure is only left when the middleware has
    /// no ErrorMiddleware.
    private func response(for result: HTTPResult, to request: (id: String, method: String)) -> HTTPResponse {
        switch result {
        case .success(let response):
            return response
        case .failure(let failure):
            if let error = failure.error as? HTTPError { return error.response }
            if !Task.isCancelled {
                logger.error(
                    "request failed",
                    metadata: ["request_id": .string(request.id), "error": .string(String(describing: failure.error))]
                )
            }
            return ErrorMiddleware.internalError
        }
    }

    /// Hands `response` to the request: kept for its I/O thread while the responder's call is
    /// still running, else its suspended connection resumed with it.
    private func complete(_ context: RequestContext, with response: HTTPResponse) {
        guard context.resume(with: response) else { return }  // answered at once, or abandoned: done
        _ = state.withLock { $0.suspended.removeValue(forKey: ObjectIdentifier(context)) }
        MHD_resume_connection(context.connection.pointer)
    }

    // MARK: libmicrohttpd callbacks (daemon threads)

    /// MHD_OPTION_URI_LOG_CALLBACK: a request line arrived; its context becomes the request's
    /// `con_cls` with one retain, given back in ``requestCompleted(slot:)``.
    func requestStarted(connection: OpaquePointer, target: UnsafePointer<CChar>?) -> UnsafeMutableRawPointer {
        let context = RequestContext(
            connection: ConnectionHandle(pointer: connection),
            target: target.map { String(cString: $0) } ?? "",
            statistics: unmanagedStatistics
        )
        return Unmanaged.passRetained(context).toOpaque()
    }

    /// The access-handler callback. Returns `false` to have libmicrohttpd close the connection.
    func access(
        connection: OpaquePointer,
        method: UnsafePointer<CChar>?,
        upload: UnsafePointer<CChar>?,
        uploadSize: UnsafeMutablePointer<Int>,
        slot: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    ) -> Bool {
        if slot.pointee == nil {
            // Every request passes the URI-log callback first; this only guards against surprises.
            slot.pointee = requestStarted(connection: connection, target: nil)
        }
        let context = Unmanaged<RequestContext>.fromOpaque(slot.pointee!).takeUnretainedValue()

        if let upload {
            let bytes = UnsafeRawBufferPointer(start: upload, count: uploadSize.pointee)
            uploadSize.pointee = 0
            return receive(bytes, into: context)
        }

        let phase = context.state.withLock { $0.phase }
        switch phase {
        case .awaitingHeaders:
            return begin(context, connection: connection, method: method)
        case .receiving:
            return dispatch(context, connection: connection)
        case .tooLarge:
            let (limit, isRoutes, head) = context.state.withLock { state in
                state.phase = .answered
                return (state.bodyLimit, state.bodyLimitIsRoutes, state.head)
            }
            var response = bodyTooLarge(limit: limit, isRoutes: isRoutes)
            if let head { response = responder.refused(head.request(body: []), with: response) }
            return queue(response, for: context, forceClose: true)
        case .resumed(let response):
            context.state.withLock { $0.phase = .answered }
            guard let response else { return false }
            return queue(response, for: context, forceClose: false)
        case .dispatching, .answeredAtOnce, .suspended, .answered:
            return true
        }
    }

    /// MHD_OPTION_NOTIFY_COMPLETED: the request is over (answered, failed, timed out or the
    /// daemon stopped). Releases the context's retain.
    func requestCompleted(connection: OpaquePointer?, slot: UnsafeMutablePointer<UnsafeMutableRawPointer?>) {
        if let deadlines, let connection { deadlines.responseFinished(on: connection) }
        guard let raw = slot.pointee else { return }
        slot.pointee = nil
        let context = Unmanaged<RequestContext>.fromOpaque(raw).takeRetainedValue()
        let (counted, wasSuspended) = context.state.withLock { state in
            state.phase = .answered
            state.body = []
            defer {
                state.counted = false
                state.wasSuspended = false
            }
            return (state.counted, state.wasSuspended)
        }
        if wasSuspended { _ = state.withLock { $0.suspended.removeValue(forKey: ObjectIdentifier(context)) } }
        guard counted else { return }
        if statistics.requestLeft() == 0, draining.load(ordering: .sequentiallyConsistent) { signalDrainedOnce() }
    }

    /// MHD_OPTION_EXTERNAL_LOGGER.
    func daemonLog(_ message: String) {
        let message = message.trimmingCharacters(in: .whitespacesAndNewlines)
        lastDaemonMessage.withLock { $0 = message }
        let level: LogLevel = started.load(ordering: .acquiring) ? .debug : .error
        logger.log(level, "libmicrohttpd: \(message)")
    }

    // MARK: Request steps (daemon thread)

    /// First call: headers are complete. Checks limits, then waits for the body.
    private func begin(_ context: RequestContext, connection: OpaquePointer, method: UnsafePointer<CChar>?) -> Bool {
        statistics.requestEntered()
        let methodName = method.map { String(cString: $0) } ?? ""
        context.state.withLock {
            $0.counted = true
            $0.isHeadRequest = methodName == "HEAD"
        }

        var received = Self.headers(of: connection)
        received.bytes += methodName.utf8.count + context.target.utf8.count + 12
        let headers = received.headers
        let normalizedMethod =
            methodName.utf8.contains(where: { $0 >= UInt8(ascii: "a") }) ? methodName.uppercased() : methodName
        let target = RequestTarget(context.target)
        // The request as far as it could be read, for the middleware to log and count a refusal.
        func refusal(_ response: HTTPResponse, decodedPath: String? = nil) -> Bool {
            let request = HTTPRequest(
                method: normalizedMethod,
                rawPath: target.rawPath,
                path: decodedPath ?? target.rawPath,
                query: decodedPath == nil ? [] : target.queryItems,
                // Too many to keep for a refusal on their account.
                headers: response.status == 431 ? HTTPHeaders() : headers,
                body: [],
                remoteAddress: SocketAddressConversion.describe(
                    herald_mhd_get_connection_info_client_address(connection)
                )
            )
            return reject(responder.refused(request, with: response), context: context)
        }
        guard received.bytes <= limits.maxHeaderSize else {
            return refusal(
                .error(
                    status: 431,
                    code: "headers_too_large",
                    message: "the request line and headers are larger than \(limits.maxHeaderSize) bytes, the most "
                        + "this server reads: send fewer or shorter headers",
                    field: "headers"
                ),
                decodedPath: RequestTarget.percentDecode(target.rawPath)
            )
        }
        guard target.rawPath.hasPrefix("/") else {
            return refusal(
                .error(
                    status: 400,
                    code: "invalid_request_target",
                    message: "the request target must be a path starting with '/' (not a full URL or '*')",
                    field: "path"
                )
            )
        }
        guard let path = RequestTarget.percentDecode(target.rawPath) else {
            return refusal(
                .error(
                    status: 400,
                    code: "invalid_path",
                    message: "the request path is not valid percent-encoded UTF-8: encode each byte outside "
                        + "ASCII letters, digits and -._~ as %XX",
                    field: "path"
                )
            )
        }

        let remoteAddress = SocketAddressConversion.describe(herald_mhd_get_connection_info_client_address(connection))
        // Route, method and admission (an API key, say) are decided on the headers alone, so that
        // a refused client never makes the server read its body.
        let admission = responder.admit(
            HTTPRequest(
                method: normalizedMethod,
                rawPath: target.rawPath,
                path: path,
                query: target.queryItems,
                headers: headers,
                body: [],
                remoteAddress: remoteAddress,
                // Given by the request id middleware if the request is refused here.
                requestID: ""
            )
        )
        let routeLimit: Int?
        let principal: (any Sendable)?
        switch admission {
        case .answer(let response):
            return reject(response, context: context)
        case .readBody(let limit, let admitted):
            routeLimit = limit
            principal = admitted
        }
        let bodyLimit = routeLimit ?? limits.maxBodySize
        var expectedLength = 0
        if let declared = headers["Content-Length"] {
            let length = UInt64(declared.trimmingSpaces()) ?? UInt64.max
            guard length <= UInt64(bodyLimit) else {
                // libmicrohttpd refuses the upload and closes once this is sent.
                return refusal(bodyTooLarge(limit: bodyLimit, isRoutes: routeLimit != nil), decodedPath: path)
            }
            expectedLength = Int(length)
        }

        // Moved into the state with `swap`: assigning it would copy its strings and headers (a
        // retain and a release each).
        var head: RequestContext.Head? = RequestContext.Head(
            method: normalizedMethod,
            target: target,
            path: path,
            headers: headers,
            remoteAddress: remoteAddress,
            principal: principal
        )
        context.state.withLock { state in
            swap(&state.head, &head)
            state.bodyLimit = bodyLimit
            state.bodyLimitIsRoutes = routeLimit != nil
            state.body.reserveCapacity(expectedLength)
            state.phase = .receiving
        }
        return true
    }

    /// Upload bytes: buffer them up to the limit, count and drop the rest.
    private func receive(_ bytes: UnsafeRawBufferPointer, into context: RequestContext) -> Bool {
        let limits = self.limits
        return context.state.withLock { state in
            switch state.phase {
            case .receiving:
                if state.body.count + bytes.count <= state.bodyLimit {
                    state.body.append(contentsOf: bytes)
                } else {
                    state.phase = .tooLarge
                    state.discardedBytes = state.body.count + bytes.count - state.bodyLimit
                    state.body = []
                }
                return true
            case .tooLarge:
                state.discardedBytes += bytes.count
                return state.discardedBytes <= max(limits.discardAllowance, state.bodyLimit)
            default:
                return true
            }
        }
    }

    /// Final call: the body is complete. Answers at once when the responder does so before its
    /// call returns; otherwise suspends the connection until the answer comes.
    private func dispatch(_ context: RequestContext, connection: OpaquePointer) -> Bool {
        // The head and body are moved out of the state (`swap`), not copied and then cleared.
        var head: RequestContext.Head?
        var body: [UInt8] = []
        context.state.withLock { state in
            swap(&head, &state.head)
            swap(&body, &state.body)
        }
        guard let head else { return false }
        let request = head.request(body: body)
        deadlines?.requestReceived(on: connection)

        context.state.withLock { $0.phase = .dispatching }
        let identity = (id: request.requestID, method: request.method)
        let events = self.events
        responder.respond(
            to: request,
            answer: HTTPResponseSink(
                spawn: { [self] work in
                    if case .terminated = events.yield(.run(work)) { complete(context, with: Self.shuttingDown) }
                },
                { [self] result in complete(context, with: response(for: result, to: identity)) }
            )
        )
        // Suspended under the context's lock: an answer from another thread finds the connection
        // either answered at once or suspended, never resumed before it is suspended.
        let answered = context.state.withLock { state -> HTTPResponse? in
            if case .answeredAtOnce(let response) = state.phase {
                state.phase = .answered
                return response
            }
            state.phase = .suspended
            state.wasSuspended = true
            MHD_suspend_connection(connection)
            return nil
        }
        if let answered { return queue(answered, for: context, forceClose: false) }
        statistics.suspended()
        let accepted = state.withLock { state in
            guard !state.closed else { return false }
            state.suspended[ObjectIdentifier(context)] = context
            return true
        }
        if !accepted, context.resume(with: Self.shuttingDown) { MHD_resume_connection(connection) }
        return true
    }

    /// Answers before the body is read (the first call) and stops there. libmicrohttpd then
    /// closes the connection rather than read what follows (a body nobody asked for); the
    /// answer says so with `Connection: close`.
    private func reject(_ response: HTTPResponse, context: RequestContext) -> Bool {
        context.state.withLock { $0.phase = .answered }
        return queue(response, for: context, forceClose: true)
    }

    /// Turns `response` into a libmicrohttpd response and queues it.
    private func queue(_ response: HTTPResponse, for context: RequestContext, forceClose: Bool) -> Bool {
        let connection = context.connection.pointer
        let isHead = context.state.withLock { $0.isHeadRequest }
        let draining = draining.load(ordering: .relaxed)

        let announcedLength = response.headers["Content-Length"].flatMap { UInt64($0) } ?? 0
        let mhdResponse: OpaquePointer?
        if isHead, response.body.isEmpty, announcedLength > 0 {
            // HEAD answered without a body: announce the GET body's length. libmicrohttpd never
            // reads the content of a HEAD response, so the reader is never called.
            mhdResponse = MHD_create_response_from_callback(
                announcedLength,
                4096,
                { _, _, _, _ in herald_mhd_content_reader_end_with_error() },
                nil,
                nil
            )
        } else {
            mhdResponse = response.body.withUnsafeBytes { bytes in
                MHD_create_response_from_buffer(
                    bytes.count,
                    UnsafeMutableRawPointer(mutating: bytes.baseAddress),
                    .RESPMEM_MUST_COPY
                )
            }
        }
        guard let mhdResponse else {
            logger.error("libmicrohttpd could not create a response; closing the connection")
            return false
        }
        defer { MHD_destroy_response(mhdResponse) }

        response.headers.forEachField { name, value in
            if HTTPHeaders.equalIgnoringCase(name, "Content-Length")
                || HTTPHeaders.equalIgnoringCase(name, "Transfer-Encoding")
            {
                return
            }
            guard Self.isValidHeader(name: name, value: value), Self.add(name, value, to: mhdResponse) else {
                logger.warning(
                    "dropped an invalid response header",
                    metadata: ["header": .string(String(decoding: name, as: UTF8.self))]
                )
                return
            }
        }
        if forceClose || draining {
            _ = MHD_add_response_header(mhdResponse, "Connection", "close")
        }
        let status = (200...999).contains(response.status) ? response.status : 500
        return MHD_queue_response(connection, UInt32(status), mhdResponse) == .YES
    }
}
