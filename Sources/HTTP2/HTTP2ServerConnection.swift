public import HeraldIO
import Synchronization

/// Controls of one connection accepted by ``HTTP2Server``, for handlers (through
/// ``HTTP2ServerRequest/connection``) and for ``HTTP2Server/Configuration/onConnection``.
///
/// What an APNs simulator needs: change SETTINGS_MAX_CONCURRENT_STREAMS as the connection goes
/// (1 until the first authenticated request succeeds, then 1000), send GOAWAY with a JSON reason,
/// drop the TCP connection, stop answering PINGs. Every method may be called from any thread; the
/// work happens on the connection's event loop.
public final class HTTP2ServerConnection: Sendable {
    /// Unique within the server, counting from 1.
    public let id: Int
    /// The client's TLS certificate, when the server's TLS configuration asks for one
    /// (``HeraldIO/TLSConfiguration/CertificateVerification/requestClientCertificate``) and the
    /// client presented one.
    public let peerCertificate: TLSPeerCertificate?
    /// Weak: a handle kept after its connection closed must not keep the session alive.
    private weak let session: ServerSession?
    private let pings = Atomic<Int>(0)

    init(id: Int, session: ServerSession, peerCertificate: TLSPeerCertificate?) {
        self.id = id
        self.session = session
        self.peerCertificate = peerCertificate
    }

    /// PING frames received from the client so far.
    public var pingsReceived: Int { pings.load(ordering: .relaxed) }

    func countPing() {
        pings.add(1, ordering: .relaxed)
    }

    /// Sends SETTINGS with a new SETTINGS_MAX_CONCURRENT_STREAMS. nghttp2 refuses streams above
    /// the limit (REFUSED_STREAM) once the client has acknowledged it.
    public func setMaxConcurrentStreams(_ value: Int) {
        session?.execute { $0.setMaxConcurrentStreams(value) }
    }

    /// Sends GOAWAY: streams above `lastStreamID` are not processed (their responses are
    /// dropped); the connection closes once the streams up to it are answered, or right after
    /// the GOAWAY is written with `closeImmediately`.
    /// - Parameters:
    ///   - lastStreamID: default: the last stream the server has started processing.
    ///   - debugData: opaque data, for APNs JSON like `{"reason":"Shutdown"}`.
    public func goAway(
        lastStreamID: Int? = nil,
        errorCode: HTTP2ErrorCode = .noError,
        debugData: String = "",
        closeImmediately: Bool = false
    ) {
        session?.execute {
            $0.goAway(
                lastStreamID: lastStreamID,
                errorCode: errorCode,
                debugData: Array(debugData.utf8),
                closeImmediately: closeImmediately
            )
        }
    }

    /// Closes the TCP connection now: no GOAWAY, no TLS close_notify; open streams are dropped.
    public func closeAbruptly() {
        session?.execute { $0.abort() }
    }

    /// Whether PINGs are acknowledged (default true). False simulates a server that has gone
    /// silent, for clients' ping timeouts.
    public func setAnswersPings(_ answers: Bool) {
        session?.execute { $0.answersPings = answers }
    }
}
