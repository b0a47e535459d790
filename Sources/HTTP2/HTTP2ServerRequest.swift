import Synchronization

/// A complete request received by ``HTTP2Server``.
public struct HTTP2ServerRequest: Sendable {
    /// `:method`.
    public var method: String
    /// `:path`.
    public var path: String
    /// `:authority` (or the `host` header), empty when absent.
    public var authority: String
    /// `:scheme`.
    public var scheme: String
    /// Regular header fields in the order received, duplicates kept.
    public var headers: HTTP2Headers
    /// The body.
    public var body: [UInt8]
    /// The HTTP/2 stream id.
    public var streamID: Int
    /// The connection the request came on: its id and its controls.
    public let connection: HTTP2ServerConnection
    let events: StreamEvents

    /// The connection's id, unique within the server.
    public var connectionID: Int { connection.id }

    /// The error code with which the client reset the stream, once it has (for example CANCEL
    /// when the client gave up); nil while the stream is open or after a normal end.
    public var resetCode: HTTP2ErrorCode? { events.resetCode }
}

/// The answer an ``HTTP2Server`` handler returns.
public struct HTTP2ServerResponse: Sendable {
    /// `:status`.
    public var status: Int
    /// Header fields (lowercase names).
    public var headers: HTTP2Headers
    /// The body; empty sends no DATA frame.
    public var body: [UInt8]

    /// When set, the stream is reset with this code instead of answered.
    public var resetCode: HTTP2ErrorCode?

    public init(status: Int, headers: HTTP2Headers = [:], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// Resets the stream (RST_STREAM) with `code` instead of answering: REFUSED_STREAM tells the
    /// client the request was not processed.
    public static func reset(_ code: HTTP2ErrorCode) -> HTTP2ServerResponse {
        var response = HTTP2ServerResponse(status: 0)
        response.resetCode = code
        return response
    }
}

/// What happened to a server stream after its request was handed out, readable from the handler.
final class StreamEvents: Sendable {
    private let reset = Mutex<HTTP2ErrorCode?>(nil)

    var resetCode: HTTP2ErrorCode? { reset.withLock { $0 } }

    func recordReset(_ code: HTTP2ErrorCode) {
        reset.withLock { $0 = code }
    }
}
