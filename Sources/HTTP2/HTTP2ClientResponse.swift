/// A response as ``HTTP2ClientConnection/send(method:fieldCount:byteCount:body:timeout:writeFields:)``
/// returns it: read in place from the finished stream, so that a caller that needs one header
/// field does not pay for decoding every field into a `String`.
package struct HTTP2ClientResponse: Sendable {
    private let stream: ClientStream

    init(stream: ClientStream) {
        self.stream = stream
    }

    /// `:status`.
    package var status: Int { stream.status }

    /// The body.
    package var body: [UInt8] { stream.responseBody }

    /// How many header fields there are (pseudo-headers excluded).
    package var headerCount: Int { stream.responseHeaderCount }

    /// Calls `body` with each header field's name and value bytes, in order; the buffers are
    /// valid during the call only.
    package func forEachHeader(_ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) -> Void) {
        stream.forEachHeader(body)
    }

    /// The response as an ``HTTP2Response``.
    package func makeResponse() -> HTTP2Response {
        stream.makeResponse()
    }
}
