public import APNs
public import HTTP2

extension APNSHTTPRequest {
    /// The request for ``HTTP2/HTTP2ClientConnection``: the same method, path, header fields (in
    /// order) and body. `neverIndex` on each field and ``pathNeverIndexed`` become HPACK "literal
    /// never indexed", so the device-token path and `apns-id` stay out of APNs' small dynamic
    /// table (APNS.md §3). `:scheme` and `:authority` come from the connection.
    public var http2Request: HTTP2Request {
        var fields = HTTP2Headers()
        fields.reserveCapacity(headers.count)
        for header in headers {
            fields.add(name: header.name, value: header.value, neverIndex: header.neverIndex)
        }
        var request = HTTP2Request(method: method, path: path, headers: fields, body: body)
        request.pathNeverIndexed = pathNeverIndexed
        return request
    }
}

extension APNSHTTPResponse {
    /// The response as the APNs client reads it: status, header fields in order, body.
    public init(_ response: HTTP2Response) {
        self.init(
            status: response.status,
            headers: response.headers.map { APNSHTTPHeader(name: $0.name, value: $0.value) },
            body: response.body
        )
    }
}

/// The pool's finished stream is what its responses are read from in place.
extension HTTP2ClientResponse: APNSReceivedResponse {}

/// HTTP/2 errors say themselves whether the request was processed: a GOAWAY above the stream's
/// id, `REFUSED_STREAM`, or a connection that failed before the request was written are safe to
/// send again; a reset or a lost connection after the request went out are not.
extension HTTP2Error: APNSRetryableError {}

extension APNSHTTPRequest {
    /// The fields' size for ``HTTP2/HTTP2ClientConnection``'s direct send: `:path` and the headers.
    var headerBlockSize: (fields: Int, bytes: Int) {
        var bytes = ":path".utf8.count + path.utf8.count
        for header in headers { bytes += header.name.utf8.count + header.value.utf8.count }
        return (1 + headers.count, bytes)
    }

    /// Writes `:path` and the headers (names lowercased), as ``http2Request`` would send them.
    func writeHeaderBlock(into writer: inout HTTP2HeaderBlockWriter) {
        writer.append(name: ":path", value: path, neverIndex: pathNeverIndexed)
        for header in headers {
            writer.append(name: header.name, value: header.value, neverIndex: header.neverIndex, lowercaseName: true)
        }
    }
}

/// The header block nghttp2 reads is where the pool writes a push's fields.
extension HTTP2HeaderBlockWriter: APNSHeaderFieldSink {}
