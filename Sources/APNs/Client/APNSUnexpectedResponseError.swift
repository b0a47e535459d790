/// A 2xx answer that lacks what the operation promises (a channel ID, a readable body).
public struct APNSUnexpectedResponseError: Error, Sendable, Hashable, CustomStringConvertible {
    public var status: Int
    public var message: String

    public init(status: Int, message: String) {
        self.status = status
        self.message = message
    }

    public var description: String { "unexpected APNs response (\(status)): \(message)" }
}
