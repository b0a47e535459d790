import Foundation
package import HTTP2

/// A device push's HTTP/2 header fields, written straight into the block nghttp2 reads: the same
/// fields, order and indexing as ``APNSRequest/httpRequest(authorization:)``, without building the
/// path, the `apns-id` string, an ``APNSHTTPRequest`` or ``HTTP2/HTTP2Headers`` on the way.
package struct APNSRequestHeaderBlock: Sendable {
    /// Fields written (after `:method`, `:scheme`, `:authority`, which the connection adds).
    package let fieldCount: Int
    /// Name and value bytes written.
    package let byteCount: Int

    /// The push itself (one shared box), and what its fields become on the wire.
    private let request: APNSRequest
    private let authorization: String?
    private let expiration: String?
    private let priority: StaticString
    private let topic: String

    /// The fields of `request` with `authorization: <authorizationHeaderValue>` when given.
    package init(_ request: APNSRequest, authorizationHeaderValue: String?) {
        self.request = request
        authorization = authorizationHeaderValue
        expiration = request.expiration.headerValue
        priority =
            switch request.effectivePriority {
            case .immediately: "10"
            case .consideringDevicePower: "5"
            case .prioritizingPower: "1"
            }
        topic = request.resolvedTopic

        var fields = 4  // :path, apns-id, apns-push-type, apns-priority, apns-topic (below)
        var bytes = ":path/3/device/".utf8.count + request.deviceToken.utf8.count
        bytes += "apns-id".utf8.count + 36
        bytes += "apns-push-type".utf8.count + request.pushType.headerValue.utf8.count
        bytes += "apns-priority".utf8.count + priority.utf8CodeUnitCount
        bytes += "apns-topic".utf8.count + topic.utf8.count
        fields += 1
        if let authorization {
            fields += 1
            bytes += "authorization".utf8.count + authorization.utf8.count
        }
        if let expiration {
            fields += 1
            bytes += "apns-expiration".utf8.count + expiration.utf8.count
        }
        if let collapseID = request.collapseID {
            fields += 1
            bytes += "apns-collapse-id".utf8.count + collapseID.utf8.count
        }
        fieldCount = fields
        byteCount = bytes
    }

    /// Writes `:path` (never indexed) and the regular fields.
    package func write(into writer: inout HTTP2HeaderBlockWriter) {
        var token = request.deviceToken
        token.withUTF8 { token in
            writer.append(name: ":path", valueLength: 10 + token.count, neverIndex: true) { out in
                let prefix: StaticString = "/3/device/"
                let start = out.baseAddress!
                start.update(from: prefix.utf8Start, count: 10)
                guard let source = token.baseAddress else { return }
                let tail = start + 10
                tail.update(from: source, count: token.count)
                for index in 0..<token.count where tail[index] &- UInt8(ascii: "A") < 26 {
                    tail[index] |= 0x20
                }
            }
        }
        if let authorization {
            writer.append(name: "authorization", value: authorization)
        }
        writer.append(name: "apns-id", valueLength: 36, neverIndex: true) { out in
            Self.formatLowercase(request.id, into: out)
        }
        writer.append(name: "apns-push-type", value: request.pushType.headerValue)
        if let expiration {
            writer.append(name: "apns-expiration", value: expiration, neverIndex: request.expiration != .immediately)
        }
        writer.append(name: "apns-priority", valueLength: priority.utf8CodeUnitCount) { out in
            out.baseAddress!.update(from: priority.utf8Start, count: priority.utf8CodeUnitCount)
        }
        writer.append(name: "apns-topic", value: topic)
        if let collapseID = request.collapseID {
            writer.append(name: "apns-collapse-id", value: collapseID)
        }
    }

    /// `uuid` as 36 lowercase characters (8-4-4-4-12), as ``APNSIdentifier/lowercaseString(_:)``.
    private static func formatLowercase(_ uuid: UUID, into out: UnsafeMutableBufferPointer<UInt8>) {
        let digits: StaticString = "0123456789abcdef"
        let hex = digits.utf8Start
        withUnsafeBytes(of: uuid.uuid) { bytes in
            var index = 0
            for position in 0..<16 {
                if position == 4 || position == 6 || position == 8 || position == 10 {
                    out[index] = UInt8(ascii: "-")
                    index += 1
                }
                let byte = bytes[position]
                out[index] = hex[Int(byte >> 4)]
                out[index + 1] = hex[Int(byte & 0x0F)]
                index += 2
            }
        }
    }
}

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
