import Foundation
import HTTP2

/// A response as an ``APNSTransport`` returns it. From the connection pool it is read in place
/// from the finished HTTP/2 stream, so that a push answered 200 costs no `String` per header field.
public struct APNSTransportResponse: Sendable {
    private enum Storage: Sendable {
        case stream(HTTP2ClientResponse)
        case parsed(APNSHTTPResponse)
    }

    private let storage: Storage

    /// A response built field by field (a test transport's).
    public init(_ response: APNSHTTPResponse) {
        storage = .parsed(response)
    }

    init(_ response: HTTP2ClientResponse) {
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
        case .stream(let response): APNSHTTPResponse(response)
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
