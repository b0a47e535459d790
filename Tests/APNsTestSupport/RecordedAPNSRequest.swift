public import APNs
public import Foundation
public import HeraldCore

/// One request the in-memory APNs received: where it went, its header fields and body as the
/// client wrote them, and the status it was answered with (`nil` for a transport error).
public struct RecordedAPNSRequest: Sendable {
    /// The host of the transport that carried it.
    public var endpoint: APNSEndpoint
    public var method: String
    public var path: String
    public var headers: [APNSHTTPHeader]
    public var body: [UInt8]
    /// The status answered, `nil` when the transport threw instead.
    public var status: Int?
    /// The in-memory APNs' clock when the request arrived.
    public var receivedAt: Date

    init(endpoint: APNSEndpoint, request: APNSHTTPRequest, status: Int?, receivedAt: Date) {
        self.endpoint = endpoint
        self.method = request.method
        self.path = request.path
        self.headers = request.headers
        self.body = request.body
        self.status = status
        self.receivedAt = receivedAt
    }

    /// The device token of a push (`/3/device/<token>`), `nil` for other requests.
    public var deviceToken: String? { Self.deviceToken(ofPath: path) }

    /// The value of the header field `name`, `nil` when absent.
    public func header(_ name: String) -> String? { headers.value(forName: name) }

    /// `apns-push-type`.
    public var pushType: String? { header("apns-push-type") }
    /// `apns-topic`.
    public var topic: String? { header("apns-topic") }
    /// `apns-priority`.
    public var priority: String? { header("apns-priority") }
    /// `apns-expiration`.
    public var expiration: String? { header("apns-expiration") }
    /// `apns-collapse-id`.
    public var collapseID: String? { header("apns-collapse-id") }
    /// `apns-id`.
    public var apnsID: String? { header("apns-id") }

    /// The body as JSON (a push's payload), `nil` when it is not JSON.
    public var payload: APNSJSONValue? { try? APNSJSONValue(parsing: body) }

    /// The body as text.
    public var bodyText: String { String(decoding: body, as: UTF8.self) }

    static func deviceToken(ofPath path: String) -> String? {
        guard path.hasPrefix("/3/device/") else { return nil }
        return String(path.dropFirst("/3/device/".count))
    }
}
