public import Foundation

/// A broadcast channel management request (APNS.md §7), sent to the management host.
///
/// | operation | request |
/// |---|---|
/// | create | `POST /1/apps/<bundle>/channels`, `{"message-storage-policy":n,"push-type":"LiveActivity"}` |
/// | read | `GET /1/apps/<bundle>/channels` with `apns-channel-id` |
/// | delete | `DELETE /1/apps/<bundle>/channels` with `apns-channel-id` |
/// | list | `GET /1/apps/<bundle>/all-channels` |
public struct APNSChannelRequest: Sendable, Hashable {
    public enum Operation: Sendable, Hashable {
        case create(APNSChannelMessageStoragePolicy)
        case read(APNSChannelID)
        case delete(APNSChannelID)
        case listAll
    }

    /// The bare bundle ID (no push-type suffix).
    public var bundleID: String
    public var operation: Operation
    /// The optional `apns-request-id`; APNs echoes it (and makes one up when absent).
    public var requestID: UUID?

    public init(bundleID: String, operation: Operation, requestID: UUID? = nil) {
        self.bundleID = bundleID
        self.operation = operation
        self.requestID = requestID
    }

    public static func create(
        bundleID: String,
        storagePolicy: APNSChannelMessageStoragePolicy,
        requestID: UUID? = nil
    ) -> APNSChannelRequest {
        APNSChannelRequest(bundleID: bundleID, operation: .create(storagePolicy), requestID: requestID)
    }

    public static func read(bundleID: String, channelID: APNSChannelID, requestID: UUID? = nil) -> APNSChannelRequest {
        APNSChannelRequest(bundleID: bundleID, operation: .read(channelID), requestID: requestID)
    }

    public static func delete(bundleID: String, channelID: APNSChannelID, requestID: UUID? = nil) -> APNSChannelRequest
    {
        APNSChannelRequest(bundleID: bundleID, operation: .delete(channelID), requestID: requestID)
    }

    public static func listAll(bundleID: String, requestID: UUID? = nil) -> APNSChannelRequest {
        APNSChannelRequest(bundleID: bundleID, operation: .listAll, requestID: requestID)
    }

    /// Checks the bundle ID (bare, path-safe) and the channel ID.
    public func validate() throws(APNSValidationError) {
        try APNSBroadcastChecks.bareBundleID(bundleID)
        switch operation {
        case .read(let channelID), .delete(let channelID): try channelID.validate()
        case .create, .listAll: break
        }
    }

    /// `POST`, `GET` or `DELETE`.
    public var method: String {
        switch operation {
        case .create: "POST"
        case .read, .listAll: "GET"
        case .delete: "DELETE"
        }
    }

    /// `/1/apps/<bundle>/channels` or `/1/apps/<bundle>/all-channels`.
    public var path: String {
        switch operation {
        case .listAll: "/1/apps/\(bundleID)/all-channels"
        default: "/1/apps/\(bundleID)/channels"
        }
    }

    /// The body: the create document, empty otherwise.
    public var body: [UInt8] {
        guard case .create(let policy) = operation else { return [] }
        return Array(#"{"message-storage-policy":\#(policy.rawValue),"push-type":"LiveActivity"}"#.utf8)
    }

    /// The header fields (``APNSRequestHeaderFields``, the one place that builds them), with
    /// `authorization: bearer <authorization>` when given.
    public func headers(authorization: String?) -> [APNSHTTPHeader] {
        httpRequest(authorization: authorization).headers
    }

    /// The HTTP/2 request. Call ``validate()`` first.
    public func httpRequest(authorization: String?) -> APNSHTTPRequest {
        APNSRequestHeaderFields(self, authorizationHeaderValue: authorization.map { "bearer " + $0 }).httpRequest
    }
}
