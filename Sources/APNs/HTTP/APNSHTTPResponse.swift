/// An HTTP/2 response as a transport returns it: status, header fields and the complete body.
public struct APNSHTTPResponse: Sendable, Hashable {
    public var status: Int
    public var headers: [APNSHTTPHeader]
    public var body: [UInt8]

    public init(status: Int, headers: [APNSHTTPHeader] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The value of the first header named `name` (case-insensitive), or `nil`.
    public func headerValue(_ name: String) -> String? {
        headers.value(forName: name)
    }
}
