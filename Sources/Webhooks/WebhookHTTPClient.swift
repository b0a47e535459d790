import CCurl
import CHeraldShims
import Foundation
import HeraldCore
import Synchronization

/// A POST to a receiver.
struct WebhookHTTPRequest: Sendable {
    var url: String
    /// `Name: value` lines.
    var headers: [String]
    var body: [UInt8]
}

/// What the receiver answered.
struct WebhookHTTPResponse: Sendable {
    var status: Int
    /// 1 for HTTP/1.x, 2 for HTTP/2.
    var httpVersion: Int
}

/// A delivery that failed before the receiver answered; the message is what the webhook's
/// `last_error` shows and never names an address the host resolved to.
struct WebhookDeliveryError: Error, CustomStringConvertible {
    var description: String
    /// Set when the destination policy refused every address of the receiver: the events are
    /// dead at once, retrying cannot help.
    var refusedRange: WebhookAddressRange?

    init(_ description: String, refusedRange: WebhookAddressRange? = nil) {
        self.description = description
        self.refusedRange = refusedRange
    }
}

/// The webhooks' HTTP client: libcurl's multi interface, driven by a thread of its own.
///
/// Every delivery is an easy handle added to one multi handle, whose connection cache keeps up to
/// ``WebhookConfiguration/maximumConnections`` connections to receivers for reuse (each closed
/// after ``WebhookConfiguration/idleConnectionTimeout``). Over TLS, ALPN picks HTTP/2 or
/// HTTP/1.1, whichever the receiver speaks; `http://` receivers get HTTP/1.1. Redirects are not
/// followed, proxies from the environment are not used, and the open-socket callback applies the
/// destination policy to each address before libcurl connects to it.
///
/// The thread owns the multi handle and every easy handle: tasks hand it requests through a
/// mutex-guarded queue and wake it with `curl_multi_wakeup`; it resumes their continuations when
/// libcurl reports the transfers done.
final class WebhookHTTPClient: Sendable {
    private let core: Core

    /// - Throws: ``WebhookDeliveryError`` when libcurl cannot be set up or
    ///   ``WebhookConfiguration/caFile`` cannot be read as PEM certificates.
    init(configuration: WebhookConfiguration) throws {
        var roots: [UInt8]?
        if let caFile = configuration.caFile {
            roots = try Self.trustedRoots(adding: caFile)
        }
        guard let multi = CurlMulti(maximumConnections: configuration.maximumConnections) else {
            throw WebhookDeliveryError("libcurl could not be initialised")
        }
        core = Core(multi: multi, configuration: configuration, roots: roots)
        let core = self.core
        let thread = Thread {
            ThreadName.setCurrent("herald-webhooks")
            _ = cherald_block_sigpipe_in_thread()
            core.run()
        }
        thread.start()
    }

    deinit {
        core.stop(then: nil)
    }

    /// POSTs `request` and returns the receiver's answer.
    ///
    /// - Throws: ``WebhookDeliveryError`` when no answer came (connection, TLS, timeout, limits,
    ///   a refused destination); `CancellationError` when the task was cancelled.
    func post(_ request: WebhookHTTPRequest) async throws -> WebhookHTTPResponse {
        let id = core.nextID()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                core.submit(Core.Submission(id: id, request: request, continuation: continuation))
            }
        } onCancel: {
            core.cancel(id)
        }
    }

    /// Ends every transfer and stops the thread; returns when it has stopped.
    func close() async {
        await withCheckedContinuation { continuation in
            core.stop { continuation.resume() }
        }
    }

    /// The system's trusted roots (libcurl's default bundle) followed by the PEM certificates of
    /// `caFile`: the file adds to the system store rather than replacing it.
    static func trustedRoots(adding caFile: String) throws -> [UInt8] {
        guard let extra = FileManager.default.contents(atPath: caFile) else {
            throw WebhookDeliveryError("HERALD_WEBHOOK_CA_FILE: cannot read \(caFile)")
        }
        guard String(decoding: extra, as: UTF8.self).contains("-----BEGIN CERTIFICATE-----") else {
            throw WebhookDeliveryError("HERALD_WEBHOOK_CA_FILE: \(caFile) holds no PEM certificate")
        }
        var system: [UInt8] = []
        if let easy = CurlEasy() {
            var path: UnsafePointer<CChar>?
            _ = cherald_curl_easy_getinfo_string(easy.handle, CURLINFO_CAINFO, &path)
            if let path, let data = FileManager.default.contents(atPath: String(cString: path)) {
                system = Array(data) + [UInt8(ascii: "\n")]
            }
        }
        return system + Array(extra)
    }
}

extension WebhookHTTPClient {
    /// The state tasks and the thread share, and the thread's loop.
    ///
    /// `@unchecked Sendable`: ``multi`` is used by the delivery thread only, apart from
    /// `curl_multi_wakeup`, which libcurl documents as safe from any thread; everything else
    /// shared is inside ``state``'s mutex. The easy handles live in the loop's local table.
    final class Core: @unchecked Sendable {
        struct Submission: Sendable {
            var id: UInt64
            var request: WebhookHTTPRequest
            var continuation: CheckedContinuation<WebhookHTTPResponse, any Error>
        }

        struct State {
            var lastID: UInt64 = 0
            var submissions: [Submission] = []
            var cancellations: [UInt64] = []
            var stopping = false
            var stopped = false
            var whenStopped: [@Sendable () -> Void] = []
        }

        private let multi: CurlMulti
        private let configuration: WebhookConfiguration
        private let roots: [UInt8]?
        private let state = Mutex(State())

        init(multi: CurlMulti, configuration: WebhookConfiguration, roots: [UInt8]?) {
            self.multi = multi
            self.configuration = configuration
            self.roots = roots
        }

        func nextID() -> UInt64 {
            state.withLock {
                $0.lastID += 1
                return $0.lastID
            }
        }

        func submit(_ submission: Submission) {
            let refused = state.withLock { state -> Bool in
                guard !state.stopping, !Task.isCancelled else { return true }
                state.submissions.append(submission)
                return false
            }
            if refused {
                submission.continuation.resume(throwing: CancellationError())
            } else {
                multi.wakeUp()
            }
        }

        func cancel(_ id: UInt64) {
            state.withLock { $0.cancellations.append(id) }
            multi.wakeUp()
        }

        /// Asks the thread to stop; `whenStopped` runs once it has (at once if it already has).
        func stop(then whenStopped: (@Sendable () -> Void)?) {
            let done = state.withLock { state -> Bool in
                state.stopping = true
                if state.stopped { return true }
                if let whenStopped { state.whenStopped.append(whenStopped) }
                return false
            }
            if done {
                whenStopped?()
            } else {
                multi.wakeUp()
            }
        }

        /// The thread's loop: start what was submitted, end what was cancelled, let libcurl
        /// work, finish what is done, wait.
        func run() {
            var active: [UInt64: (easy: CurlEasy, submission: Submission)] = [:]
            var byHandle: [UnsafeMutableRawPointer: UInt64] = [:]
            func finish(_ id: UInt64, _ result: Result<WebhookHTTPResponse, any Error>) {
                guard let entry = active.removeValue(forKey: id) else { return }
                byHandle[entry.easy.handle] = nil
                multi.remove(entry.easy)
                entry.submission.continuation.resume(with: result)
            }
            while true {
                let (submissions, cancellations, stopping) = state.withLock { state in
                    defer {
                        state.submissions = []
                        state.cancellations = []
                    }
                    return (state.submissions, state.cancellations, state.stopping)
                }
                for submission in submissions {
                    guard let easy = makeEasy(submission.request), multi.add(easy) else {
                        submission.continuation.resume(
                            throwing: WebhookDeliveryError("libcurl could not start the delivery")
                        )
                        continue
                    }
                    active[submission.id] = (easy, submission)
                    byHandle[easy.handle] = submission.id
                }
                for id in cancellations { finish(id, .failure(CancellationError())) }
                if stopping {
                    for id in Array(active.keys) { finish(id, .failure(CancellationError())) }
                    break
                }
                if !multi.perform() {
                    for id in Array(active.keys) {
                        finish(id, .failure(WebhookDeliveryError("libcurl failed while delivering")))
                    }
                }
                while let (handle, code) = multi.nextFinished() {
                    guard let id = byHandle[handle], let easy = active[id]?.easy else { continue }
                    finish(id, Self.outcome(code, easy, configuration))
                }
                multi.poll(milliseconds: 1_000)
            }
            let waiters = state.withLock { state in
                state.stopped = true
                // Submissions that raced the stop get an answer too.
                defer {
                    state.submissions = []
                    state.whenStopped = []
                }
                return (state.submissions, state.whenStopped)
            }
            for submission in waiters.0 { submission.continuation.resume(throwing: CancellationError()) }
            for whenStopped in waiters.1 { whenStopped() }
        }

        private func makeEasy(_ request: WebhookHTTPRequest) -> CurlEasy? {
            guard let easy = CurlEasy() else { return nil }
            let connect = Int(configuration.connectTimeout.timeInterval * 1_000)
            let total = connect + Int(configuration.requestTimeout.timeInterval * 1_000)
            var ok = easy.set(CURLOPT_URL, request.url)
            ok = ok && easy.set(CURLOPT_PROTOCOLS_STR, "http,https")
            ok = ok && easy.set(CURLOPT_NOSIGNAL, 1)
            ok = ok && easy.set(CURLOPT_FOLLOWLOCATION, 0)
            // Over TLS, ALPN offers h2 and http/1.1; http:// is HTTP/1.1.
            ok = ok && easy.set(CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS))
            // The policy judges the address connected to: a proxy would hide the receiver's.
            ok = ok && easy.set(CURLOPT_PROXY, "")
            ok = ok && easy.set(CURLOPT_CONNECTTIMEOUT_MS, connect)
            ok = ok && easy.set(CURLOPT_TIMEOUT_MS, total)
            ok = ok && easy.set(CURLOPT_MAXAGE_CONN, max(1, Int(configuration.idleConnectionTimeout)))
            ok = ok && easy.set(CURLOPT_PIPEWAIT, 1)
            ok = ok && easy.set(CURLOPT_POST, 1)
            ok = ok && easy.setPostBody(request.body)
            // No "Expect: 100-continue" round trip: the body is small and always sent.
            ok = ok && easy.set(CURLOPT_HTTPHEADER, list: request.headers + ["Expect:"])
            ok = ok && easy.set(CURLOPT_RESOLVE, list: configuration.resolveOverrides)
            if let roots { ok = ok && easy.setTrustedRoots(roots) }
            guard ok else { return nil }
            easy.allowPrivate = configuration.allowPrivate
            easy.installCallbacks()
            return easy
        }

        /// The answer, or the failure phrased from libcurl's error code (its error text can name
        /// the addresses the host resolved to, which `last_error` must not show).
        static func outcome(
            _ code: CURLcode,
            _ easy: CurlEasy,
            _ configuration: WebhookConfiguration
        ) -> Result<WebhookHTTPResponse, any Error> {
            if code == CURLE_OK {
                return .success(WebhookHTTPResponse(status: easy.responseCode, httpVersion: easy.httpVersion))
            }
            if let range = easy.refusedRange, code == CURLE_COULDNT_CONNECT {
                return .failure(
                    WebhookDeliveryError(
                        "destination_not_allowed: the receiver's host resolved to \(range.phrase), which Herald does "
                            + "not deliver to (set HERALD_WEBHOOK_ALLOW_PRIVATE=1 to allow it)",
                        refusedRange: range
                    )
                )
            }
            if easy.headerLimitExceeded {
                return .failure(
                    WebhookDeliveryError(
                        "the receiver's response headers exceeded \(CurlEasy.maximumHeaderBytes / 1_024) KiB: "
                            + "Herald dropped the connection"
                    )
                )
            }
            if easy.bodyLimitExceeded {
                return .failure(
                    WebhookDeliveryError(
                        "the receiver's response body exceeded \(CurlEasy.maximumBodyBytes / 1_024) KiB: "
                            + "Herald dropped the connection"
                    )
                )
            }
            return .failure(WebhookDeliveryError(message(for: code, configuration)))
        }

        static func message(for code: CURLcode, _ configuration: WebhookConfiguration) -> String {
            let connect = Int(configuration.connectTimeout.timeInterval)
            let total = connect + Int(configuration.requestTimeout.timeInterval)
            switch code {
            case CURLE_COULDNT_RESOLVE_HOST:
                return "could not resolve the receiver's host name"
            case CURLE_COULDNT_CONNECT:
                return "could not connect to the receiver's host (connection refused or unreachable)"
            case CURLE_OPERATION_TIMEDOUT:
                return "the receiver did not answer in time (\(connect) s to connect, \(total) s in all)"
            case CURLE_SSL_CONNECT_ERROR:
                return "the TLS handshake with the receiver failed"
            case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR:
                return "the receiver's TLS certificate is not trusted for its host name (a private CA can be "
                    + "added with HERALD_WEBHOOK_CA_FILE)"
            case CURLE_GOT_NOTHING:
                return "the receiver closed the connection without answering"
            case CURLE_SEND_ERROR:
                return "the connection to the receiver failed while sending"
            case CURLE_RECV_ERROR:
                return "the connection to the receiver failed while receiving its answer"
            case CURLE_HTTP2, CURLE_HTTP2_STREAM:
                return "the receiver's HTTP/2 connection or stream failed"
            case CURLE_WEIRD_SERVER_REPLY, CURLE_UNSUPPORTED_PROTOCOL:
                return "the receiver's answer is not valid HTTP"
            case CURLE_URL_MALFORMAT:
                return "the webhook's URL cannot be used"
            case CURLE_OUT_OF_MEMORY:
                return "the receiver's answer could not be read (a header line too long, or out of memory)"
            default:
                return "the delivery failed (libcurl error \(code.rawValue))"
            }
        }
    }
}
