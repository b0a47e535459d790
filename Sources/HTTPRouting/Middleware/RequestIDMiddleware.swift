import HeraldCore

/// Gives each request a correlation id and echoes it in the response's `X-Request-Id`.
///
/// An incoming `X-Request-Id` is adopted when it is sane: 1 to 128 characters of
/// `[A-Za-z0-9._-]`. Anything else is replaced by a new lower-case UUID, so that a client cannot
/// inject text into logs.
public struct RequestIDMiddleware: HTTPMiddleware {
    public static let headerName = "X-Request-Id"

    public init() {}

    public func handle(
        _ request: HTTPRequest,
        answer: HTTPResponseSink,
        next: (HTTPRequest, HTTPResponseSink) -> Void
    ) {
        let request = Self.identified(request)
        let id = request.requestID
        next(
            request,
            answer.map { result in
                guard case .success(var response) = result else { return result }
                response.headers.replaceOrAdd(name: Self.headerName, value: id)
                return .success(response)
            }
        )
    }

    /// `request` with the id it will be known by.
    private static func identified(_ request: HTTPRequest) -> HTTPRequest {
        var request = request
        if let incoming = request.headers[headerName], isSane(incoming) {
            request.requestID = incoming
        } else if request.requestID.isEmpty {
            request.requestID = RequestIdentifier.next()
        }
        return request
    }

    /// Whether `id` is 1…128 characters of `[A-Za-z0-9._-]`.
    public static func isSane(_ id: String) -> Bool {
        let utf8 = id.utf8
        guard !utf8.isEmpty, utf8.count <= 128 else { return false }
        return utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
                true
            default:
                false
            }
        }
    }
}
