import CMicroHTTPD
import Foundation
import HTTPRouting
import HeraldCore
import Synchronization

/// Reading a request's header fields from libmicrohttpd and the answers about them.
extension HTTPServerCore {
    /// The request's header fields, and their size as sent (name, value, `: ` and CRLF each).
    static func headers(of connection: OpaquePointer) -> (headers: HTTPHeaders, bytes: Int) {
        // Without an iterator, libmicrohttpd only counts the fields.
        let count = Int(MHD_get_connection_values_n(connection, .HEADER_KIND, nil, nil))
        var received = (headers: HTTPHeaders(minimumCapacity: count, byteCount: 32 * count), bytes: 0)
        withUnsafeMutablePointer(to: &received) { pointer in
            _ = MHD_get_connection_values_n(
                connection,
                .HEADER_KIND,
                { cls, _, key, keySize, value, valueSize in
                    guard let cls, let key else { return .YES }
                    let received = cls.assumingMemoryBound(to: (headers: HTTPHeaders, bytes: Int).self)
                    received.pointee.bytes += keySize + valueSize + 4
                    key.withMemoryRebound(to: UInt8.self, capacity: keySize) { key in
                        let name = UnsafeBufferPointer(start: key, count: keySize)
                        guard let value else {
                            received.pointee.headers.add(name: name, value: UnsafeBufferPointer(start: nil, count: 0))
                            return
                        }
                        value.withMemoryRebound(to: UInt8.self, capacity: valueSize) { value in
                            received.pointee.headers.add(
                                name: name,
                                value: UnsafeBufferPointer(start: value, count: valueSize)
                            )
                        }
                    }
                    return .YES
                },
                pointer
            )
        }
        return received
    }

    /// A header libmicrohttpd may send as is: a token name and a value without control bytes
    /// (tab allowed), so that no handler can split a response.
    static func isValidHeader(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) -> Bool {
        guard !name.isEmpty, name.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: ":") }) else {
            return false
        }
        return value.allSatisfy { $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }
    }

    /// Adds one header to `response` from its bytes, NUL-terminated in a stack buffer: passing
    /// `String`s cost a `String` for the value and a C string for each, per header, per response.
    static func add(
        _ name: UnsafeBufferPointer<UInt8>,
        _ value: UnsafeBufferPointer<UInt8>,
        to response: OpaquePointer
    ) -> Bool {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: name.count + value.count + 2) { buffer in
            let base = buffer.baseAddress!
            name.withMemoryRebound(to: CChar.self) { name in
                if let source = name.baseAddress { base.update(from: source, count: name.count) }
            }
            base[name.count] = 0
            let valueStart = base + name.count + 1
            value.withMemoryRebound(to: CChar.self) { value in
                if let source = value.baseAddress { valueStart.update(from: source, count: value.count) }
            }
            valueStart[value.count] = 0
            return MHD_add_response_header(response, base, valueStart) == .YES
        }
    }

    /// 413 for a body over `limit`: the route's own (`isRoutes`), or the server's, whose setting
    /// it names when it has one.
    func bodyTooLarge(limit: Int, isRoutes: Bool) -> HTTPResponse {
        let what =
            isRoutes
            ? "the most this route takes"
            : limits.maxBodySizeSetting.map { "the most \($0) allows" } ?? "the most this server takes"
        let remedy = isRoutes ? "" : limits.maxBodySizeSetting.map { " (or raise \($0))" } ?? ""
        return .error(
            status: 413,
            code: "body_too_large",
            message: "the request body is larger than \(limit) bytes, \(what): send a smaller one\(remedy)",
            field: "body"
        )
    }

    static var shuttingDown: HTTPResponse {
        var response = HTTPResponse.error(
            status: 503,
            code: "shutting_down",
            message: "the server is shutting down: retry the request, as Retry-After says"
        )
        response.headers.replaceOrAdd(name: "Retry-After", value: "1")
        return response
    }
}
