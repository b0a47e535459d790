import Foundation

/// A device push's HTTP/2 header fields: the one place that decides their names, values, order
/// and indexing. Both forms come from ``write(into:)``: the header block nghttp2 reads (the
/// connection pool) and the ``APNSHTTPRequest`` a test transport sees
/// (``APNSRequest/httpRequest(authorization:)``).
///
/// `:path` (never indexed), then `authorization` (when given), `apns-id` (never indexed),
/// `apns-push-type`, `apns-expiration` (unless omitted; never indexed when a timestamp),
/// `apns-priority`, `apns-topic`, `apns-collapse-id` (when set). Values unique per request stay
/// out of APNs' small HPACK dynamic table (APNS.md §3).
package struct APNSRequestHeaderFields: Sendable {
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

        // :path, apns-id, apns-push-type, apns-priority, apns-topic, then the optional ones.
        var fields = 5
        var bytes = ":path/3/device/".utf8.count + request.deviceToken.utf8.count
        bytes += "apns-id".utf8.count + 36
        bytes += "apns-push-type".utf8.count + request.pushType.headerValue.utf8.count
        bytes += "apns-priority".utf8.count + priority.utf8CodeUnitCount
        bytes += "apns-topic".utf8.count + topic.utf8.count
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

    /// Writes `:path` and the regular fields, in order, into `sink`.
    package func write<Sink: APNSHeaderFieldSink & ~Copyable>(into sink: inout Sink) {
        var token = request.deviceToken
        token.withUTF8 { token in
            sink.append(name: ":path", valueLength: 10 + token.count, neverIndex: true) { out in
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
            sink.append(name: "authorization", value: authorization, neverIndex: false)
        }
        let id = request.id
        sink.append(name: "apns-id", valueLength: 36, neverIndex: true) { out in
            Self.formatLowercase(id, into: out)
        }
        sink.append(name: "apns-push-type", value: request.pushType.headerValue, neverIndex: false)
        if let expiration {
            sink.append(name: "apns-expiration", value: expiration, neverIndex: request.expiration != .immediately)
        }
        let priority = self.priority
        sink.append(name: "apns-priority", valueLength: priority.utf8CodeUnitCount, neverIndex: false) { out in
            out.baseAddress!.update(from: priority.utf8Start, count: priority.utf8CodeUnitCount)
        }
        sink.append(name: "apns-topic", value: topic, neverIndex: false)
        if let collapseID = request.collapseID {
            sink.append(name: "apns-collapse-id", value: collapseID, neverIndex: false)
        }
    }

    /// The fields as an ``APNSHTTPRequest`` (`POST`, the push's payload).
    package var httpRequest: APNSHTTPRequest {
        var list = HeaderList()
        list.headers.reserveCapacity(fieldCount - 1)
        write(into: &list)
        return APNSHTTPRequest(
            method: "POST",
            path: list.path,
            pathNeverIndexed: list.pathNeverIndexed,
            headers: list.headers,
            body: request.payload
        )
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

/// Where ``APNSRequestHeaderFields`` writes: an HTTP/2 header block, or a header list.
package protocol APNSHeaderFieldSink: ~Copyable {
    mutating func append(name: StaticString, value: String, neverIndex: Bool)
    /// A value of exactly `valueLength` bytes that `writeValue` fills in place.
    mutating func append(
        name: StaticString,
        valueLength: Int,
        neverIndex: Bool,
        writeValue: (UnsafeMutableBufferPointer<UInt8>) -> Void
    )
}

/// The fields as `:path` and a list of ``APNSHTTPHeader``.
private struct HeaderList: APNSHeaderFieldSink {
    var path = ""
    var pathNeverIndexed = false
    var headers: [APNSHTTPHeader] = []

    mutating func append(name: StaticString, value: String, neverIndex: Bool) {
        let name = name.description
        if name == ":path" {
            (path, pathNeverIndexed) = (value, neverIndex)
        } else {
            headers.append(APNSHTTPHeader(name: name, value: value, neverIndex: neverIndex))
        }
    }

    mutating func append(
        name: StaticString,
        valueLength: Int,
        neverIndex: Bool,
        writeValue: (UnsafeMutableBufferPointer<UInt8>) -> Void
    ) {
        let value = String(unsafeUninitializedCapacity: valueLength) { out in
            writeValue(out)
            return valueLength
        }
        append(name: name, value: value, neverIndex: neverIndex)
    }
}
