import HeraldCore

/// Why an HTTP/2 connection or request failed.
///
/// ``isSafeToRetry`` is true when the request was certainly not processed by the server: it was
/// above a GOAWAY's last-stream-id, refused with REFUSED_STREAM, never written because the
/// connection failed or was closing first, or still waiting for a free stream. Such a request may
/// be sent again on another connection.
public struct HTTP2Error: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: Hashable, Sendable {
            case connectFailed, connectionClosed, goAway, streamRefused, streamReset
            case requestTimeout, pingTimeout, protocolError, streamIDsExhausted, responseTooLarge
            case headerListTooLarge
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The connection could not be established (DNS, TCP, TLS, ALPN, or no SETTINGS in
        /// time); ``HTTP2Error/underlying`` says which.
        public static let connectFailed = Code(.connectFailed)
        /// The connection closed or failed (or was closed by ``HTTP2ClientConnection/close()``)
        /// before the response was complete.
        public static let connectionClosed = Code(.connectionClosed)
        /// The peer sent GOAWAY and will not process this request; see ``HTTP2Error/goAway``.
        public static let goAway = Code(.goAway)
        /// The peer refused the stream (REFUSED_STREAM) without processing it.
        public static let streamRefused = Code(.streamRefused)
        /// The peer reset the stream with another error code; see ``HTTP2Error/errorCode``.
        public static let streamReset = Code(.streamReset)
        /// The request's timeout passed; the stream (if opened) was reset with CANCEL.
        public static let requestTimeout = Code(.requestTimeout)
        /// A PING was not answered in time; the connection was closed.
        public static let pingTimeout = Code(.pingTimeout)
        /// The peer broke the HTTP/2 protocol (or nghttp2 reported a fatal error).
        public static let protocolError = Code(.protocolError)
        /// The connection used all stream ids; open another connection.
        public static let streamIDsExhausted = Code(.streamIDsExhausted)
        /// The response body exceeded ``HTTP2ClientConnection/Configuration/maximumResponseBodySize``.
        public static let responseTooLarge = Code(.responseTooLarge)
        /// The peer sent a response header list over 64 KiB (SETTINGS_MAX_HEADER_LIST_SIZE, which
        /// the client announces) or a header block in too many CONTINUATION frames; the
        /// connection was dropped.
        public static let headerListTooLarge = Code(.headerListTooLarge)

        public var description: String {
            switch base {
            case .connectFailed: "connect failed"
            case .connectionClosed: "connection closed"
            case .goAway: "GOAWAY"
            case .streamRefused: "stream refused"
            case .streamReset: "stream reset"
            case .requestTimeout: "request timeout"
            case .pingTimeout: "ping timeout"
            case .protocolError: "protocol error"
            case .streamIDsExhausted: "stream ids exhausted"
            case .responseTooLarge: "response too large"
            case .headerListTooLarge: "header list too large"
            }
        }
    }

    public let code: Code
    /// True when the request was not processed and may be sent again elsewhere.
    public let isSafeToRetry: Bool
    /// The GOAWAY that caused this error or that the connection had received, if any.
    public let goAway: HTTP2GoAway?
    /// The HTTP/2 error code of a RST_STREAM or GOAWAY, if one caused this error.
    public let errorCode: HTTP2ErrorCode?
    /// The lower-level error (``HeraldIO`` `TLSError`, `IOError`, `ChannelError`), if any.
    public let underlying: (any Error)?
    /// A sentence describing the failure.
    public let message: String

    public init(
        code: Code,
        isSafeToRetry: Bool,
        message: String,
        goAway: HTTP2GoAway? = nil,
        errorCode: HTTP2ErrorCode? = nil,
        underlying: (any Error)? = nil
    ) {
        self.code = code
        self.isSafeToRetry = isSafeToRetry
        self.message = message
        self.goAway = goAway
        self.errorCode = errorCode
        self.underlying = underlying
    }

    /// The `reason` from the GOAWAY's JSON debug data (APNs: `Shutdown`, `BadCertificate`…).
    public var goAwayReason: String? { goAway?.reason }

    public var description: String { message }

    /// The same error with a different retry verdict.
    func with(safeToRetry: Bool) -> HTTP2Error {
        HTTP2Error(
            code: code,
            isSafeToRetry: safeToRetry,
            message: message,
            goAway: goAway,
            errorCode: errorCode,
            underlying: underlying
        )
    }
}

/// Reads `{"reason": "..."}` debug data, with the one JSON grammar.
enum JSONReason {
    static func parse(_ bytes: [UInt8]) -> String? {
        guard bytes.first == UInt8(ascii: "{"), let value = try? JSONValue.parse(bytes) else { return nil }
        return value["reason"]?.stringValue
    }
}
