import Foundation

/// The HTTP/2 header fields of every request Herald sends APNs: a device push, a broadcast on a
/// channel, a channel management request. The one place that decides their names, values, order
/// and indexing. Both forms come from ``write(into:)``: the header block nghttp2 reads (the
/// connection pool) and the ``APNSHTTPRequest`` a test transport sees
/// (``APNSRequest/httpRequest(authorization:)``, ``APNSBroadcastRequest/httpRequest(authorization:)``,
/// ``APNSChannelRequest/httpRequest(authorization:)``).
///
/// A device push: `:path` (never indexed), then `authorization` (when given), `apns-id` (never
/// indexed), `apns-push-type`, `apns-expiration` (unless omitted; never indexed when a timestamp),
/// `apns-priority`, `apns-topic`, `apns-collapse-id` (when set). A broadcast: `:path`,
/// `authorization`, `apns-request-id` (when set, never indexed), `apns-channel-id`,
/// `apns-push-type: liveactivity`, `apns-expiration` (`0` when none), `apns-priority`. A channel
/// request: `:path`, `authorization`, `apns-request-id`, `apns-channel-id` (read and delete).
/// Values unique per request stay out of APNs' small HPACK dynamic table (APNS.md §3).
package struct APNSRequestHeaderFields: Sendable {
    /// Fields written (after `:method`, `:scheme`, `:authority`, which the connection adds).
    package let fieldCount: Int
    /// Name and value bytes written.
    package let byteCount: Int

    /// What is sent, and what its fields become on the wire.
    private let shape: Shape
    private let authorization: String?

    private enum Shape: Sendable {
        /// The push itself (one shared box) and its fields' values, computed once.
        case device(APNSRequest, expiration: String?, priority: StaticString, topic: String)
        case broadcast(APNSBroadcastRequest)
        case channel(APNSChannelRequest)
    }

    /// The fields of `request` with `authorization: <authorizationHeaderValue>` when given.
    package init(_ request: APNSRequest, authorizationHeaderValue: String?) {
        authorization = authorizationHeaderValue
        let expiration = request.expiration.headerValue
        let priority = Self.priorityValue(request.effectivePriority)
        let topic = request.resolvedTopic
        shape = .device(request, expiration: expiration, priority: priority, topic: topic)

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

    /// The fields of a broadcast on a channel (`authorizationHeaderValue` as sent: `bearer …`).
    package init(_ request: APNSBroadcastRequest, authorizationHeaderValue: String?) {
        (shape, authorization) = (.broadcast(request), authorizationHeaderValue)
        var counter = FieldCounter()
        Self.write(shape, authorization: authorization, into: &counter)
        (fieldCount, byteCount) = (counter.fields, counter.bytes)
    }

    /// The fields of a channel management request (`authorizationHeaderValue` as sent).
    package init(_ request: APNSChannelRequest, authorizationHeaderValue: String?) {
        (shape, authorization) = (.channel(request), authorizationHeaderValue)
        var counter = FieldCounter()
        Self.write(shape, authorization: authorization, into: &counter)
        (fieldCount, byteCount) = (counter.fields, counter.bytes)
    }

    /// Writes `:path` and the regular fields, in order, into `sink`.
    package func write<Sink: APNSHeaderFieldSink & ~Copyable>(into sink: inout Sink) {
        Self.write(shape, authorization: authorization, into: &sink)
    }

    private static func write<Sink: APNSHeaderFieldSink & ~Copyable>(
        _ shape: Shape,
        authorization: String?,
        into sink: inout Sink
    ) {
        switch shape {
        case .device(let request, let expiration, let priority, let topic):
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
                formatLowercase(id, into: out)
            }
            sink.append(name: "apns-push-type", value: request.pushType.headerValue, neverIndex: false)
            if let expiration {
                sink.append(name: "apns-expiration", value: expiration, neverIndex: request.expiration != .immediately)
            }
            append(priority: priority, into: &sink)
            sink.append(name: "apns-topic", value: topic, neverIndex: false)
            if let collapseID = request.collapseID {
                sink.append(name: "apns-collapse-id", value: collapseID, neverIndex: false)
            }
        case .broadcast(let request):
            sink.append(name: ":path", value: request.path, neverIndex: false)
            appendAuthorizationAndRequestID(authorization, request.requestID, into: &sink)
            sink.append(name: "apns-channel-id", value: request.channelID.rawValue, neverIndex: false)
            sink.append(name: "apns-push-type", value: APNSPushType.liveActivity.headerValue, neverIndex: false)
            sink.append(
                name: "apns-expiration",
                value: request.expiration.headerValue ?? "0",
                neverIndex: request.expiration != .immediately
            )
            append(priority: priorityValue(request.priority), into: &sink)
        case .channel(let request):
            sink.append(name: ":path", value: request.path, neverIndex: false)
            appendAuthorizationAndRequestID(authorization, request.requestID, into: &sink)
            switch request.operation {
            case .read(let channelID), .delete(let channelID):
                sink.append(name: "apns-channel-id", value: channelID.rawValue, neverIndex: false)
            case .create, .listAll:
                break
            }
        }
    }

    private static func appendAuthorizationAndRequestID<Sink: APNSHeaderFieldSink & ~Copyable>(
        _ authorization: String?,
        _ requestID: UUID?,
        into sink: inout Sink
    ) {
        if let authorization {
            sink.append(name: "authorization", value: authorization, neverIndex: false)
        }
        if let requestID {
            sink.append(name: "apns-request-id", valueLength: 36, neverIndex: true) { out in
                formatLowercase(requestID, into: out)
            }
        }
    }

    private static func append<Sink: APNSHeaderFieldSink & ~Copyable>(priority: StaticString, into sink: inout Sink) {
        sink.append(name: "apns-priority", valueLength: priority.utf8CodeUnitCount, neverIndex: false) { out in
            out.baseAddress!.update(from: priority.utf8Start, count: priority.utf8CodeUnitCount)
        }
    }

    private static func priorityValue(_ priority: APNSPriority) -> StaticString {
        switch priority {
        case .immediately: "10"
        case .consideringDevicePower: "5"
        case .prioritizingPower: "1"
        }
    }

    /// The fields as an ``APNSHTTPRequest``: the method and body of what is sent.
    package var httpRequest: APNSHTTPRequest {
        var list = HeaderList()
        list.headers.reserveCapacity(fieldCount - 1)
        write(into: &list)
        let (method, body): (String, [UInt8]) =
            switch shape {
            case .device(let request, _, _, _): ("POST", request.payload)
            case .broadcast(let request): ("POST", request.payload)
            case .channel(let request): (request.method, request.body)
            }
        return APNSHTTPRequest(
            method: method,
            path: list.path,
            pathNeverIndexed: list.pathNeverIndexed,
            headers: list.headers,
            body: body
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

/// Counts the fields and their name and value bytes, `:path` included.
private struct FieldCounter: APNSHeaderFieldSink {
    var fields = 0
    var bytes = 0

    mutating func append(name: StaticString, value: String, neverIndex: Bool) {
        fields += 1
        bytes += name.utf8CodeUnitCount + value.utf8.count
    }

    mutating func append(
        name: StaticString,
        valueLength: Int,
        neverIndex: Bool,
        writeValue: (UnsafeMutableBufferPointer<UInt8>) -> Void
    ) {
        fields += 1
        bytes += name.utf8CodeUnitCount + valueLength
    }
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
