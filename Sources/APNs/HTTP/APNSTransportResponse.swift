import Foundation

/// A response as an ``APNSTransport`` returns it. From the connection pool it is read in place
/// from the finished HTTP/2 stream, so that a push answered 200 costs no `String` per header field.
public struct APNSTransportResponse: Sendable {
    private enum Storage: Sendable {
        case stream(any APNSReceivedResponse)
        case parsed(APNSHTTPResponse)
    }

    private let storage: Storage

    /// A response built field by field (a test transport's).
    public init(_ response: APNSHTTPResponse) {
        storage = .parsed(response)
    }

    /// A response read in place where it arrived (the pool's finished stream).
    package init(_ response: some APNSReceivedResponse) {
        storage = .stream(response)
    }

    /// `:status`.
    public var status: Int {
        switch storage {
        case .stream(let response): response.status
        case .parsed(let response): response.status
        }
    }

    /// The body (what 503 and the other refusals explain themselves with).
    public var body: [UInt8] {
        switch storage {
        case .stream(let response): response.body
        case .parsed(let response): response.body
        }
    }

    /// The whole response, every header field decoded.
    public var httpResponse: APNSHTTPResponse {
        switch storage {
        case .stream(let response): APNSHTTPResponse(decoding: response)
        case .parsed(let response): response
        }
    }

    /// The ids APNs answered with, read from the header bytes on the pool's path.
    func delivery(attempts: Int) -> APNSDelivery {
        guard case .stream(let response) = storage else { return APNSDelivery(httpResponse, attempts: attempts) }
        var delivery = APNSDelivery(attempts: attempts)
        response.forEachHeader { name, value in
            if Self.equal(name, "apns-id") {
                delivery.apnsID = APNSIdentifier.parse(bytes: value)
            } else if Self.equal(name, "apns-unique-id") {
                delivery.uniqueID = String(decoding: value, as: UTF8.self)
            } else if Self.equal(name, "apns-request-id") {
                delivery.requestID = APNSIdentifier.parse(bytes: value)
            }
        }
        return delivery
    }

    /// Whether the field name `bytes` is `name` (nghttp2 delivers names in lowercase).
    @inline(__always)
    private static func equal(_ bytes: UnsafeRawBufferPointer, _ name: StaticString) -> Bool {
        bytes.count == name.utf8CodeUnitCount && memcmp(bytes.baseAddress!, name.utf8Start, bytes.count) == 0
    }
}

/// A response a transport reads in place where it arrived, so that the client decodes only the
/// header fields it needs. The pool's finished HTTP/2 stream is the one conformance; it lives in
/// the transport module, which keeps HTTP/2 out of this one.
package protocol APNSReceivedResponse: Sendable {
    /// `:status`.
    var status: Int { get }
    /// The body.
    var body: [UInt8] { get }
    /// How many header fields there are (pseudo-headers excluded).
    var headerCount: Int { get }
    /// Calls `body` with each header field's name and value bytes, in order; the buffers are
    /// valid during the call only.
    func forEachHeader(_ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) -> Void)
}

extension APNSHTTPResponse {
    /// `response` with every header field decoded.
    init(decoding response: some APNSReceivedResponse) {
        var headers: [APNSHTTPHeader] = []
        headers.reserveCapacity(response.headerCount)
        response.forEachHeader { name, value in
            headers.append(
                APNSHTTPHeader(
                    name: String(decoding: name, as: UTF8.self),
                    value: String(decoding: value, as: UTF8.self)
                )
            )
        }
        self.init(status: response.status, headers: headers, body: response.body)
    }
}
