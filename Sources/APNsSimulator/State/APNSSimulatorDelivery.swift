public import APNs
public import Foundation
public import HeraldCore

/// One device push or broadcast the simulator received, with its answer: what `GET /deliveries`
/// lists. Rejected requests are recorded too, with the fields they carried.
public struct APNSSimulatorDelivery: Sendable, Hashable {
    /// Device push or broadcast.
    public enum Kind: String, Sendable, Hashable, Codable {
        case device
        case broadcast
    }

    /// The provider token's claims, as presented (also when the token was refused).
    public struct ProviderToken: Sendable, Hashable {
        /// `kid`.
        public var keyID: String
        /// `iss`.
        public var teamID: String
        /// `iat`, seconds since 1970.
        public var issuedAt: Int64
    }

    public var id: UUID
    public var receivedAt: Date
    public var kind: Kind
    /// The HTTP/2 connection, unique within its listener.
    public var connectionID: Int
    /// The device token from the path, lowercase (device pushes).
    public var token: String?
    /// `apns-topic` (device pushes) or the path's bundle ID (broadcasts).
    public var topic: String?
    /// `apns-push-type` as sent.
    public var pushType: String?
    /// `apns-priority` as a number, when it was one.
    public var priority: Int?
    /// `apns-expiration` as a number, when it was one.
    public var expiration: Int64?
    /// `apns-collapse-id`.
    public var collapseID: String?
    /// The `apns-id` answered (the request's, or the one generated); device pushes.
    public var apnsID: String?
    /// The `apns-request-id` answered; broadcasts.
    public var requestID: String?
    /// `apns-channel-id`; broadcasts.
    public var channelID: String?
    /// The status answered.
    public var status: Int
    /// The reason answered; `nil` for 200.
    public var reason: APNSErrorReason?
    /// The 410 timestamp answered.
    public var timestamp: Date?
    /// The body as received.
    public var payload: [UInt8]
    /// The provider token's claims, when one could be decoded.
    public var providerToken: ProviderToken?

    /// Whether APNs would have delivered it (status 200).
    public var isDelivered: Bool { status == 200 }

    /// The payload parsed, when it is JSON.
    public var payloadJSON: APNSJSONValue? {
        guard JSONValue.check(payload, maximumDepth: JSONValue.payloadMaximumDepth) == nil else { return nil }
        return try? APNSJSONValue(parsing: payload)
    }
}

/// Which deliveries to list: every set field must match.
public struct APNSSimulatorDeliveryFilter: Sendable, Hashable {
    public var token: String?
    /// Matches `apns-topic` (device) or the bundle ID (broadcasts).
    public var topic: String?
    public var pushType: String?
    public var channelID: String?
    public var status: Int?
    public var kind: APNSSimulatorDelivery.Kind?
    /// The most recent `limit` matches; `nil` for all.
    public var limit: Int?

    public init(
        token: String? = nil,
        topic: String? = nil,
        pushType: String? = nil,
        channelID: String? = nil,
        status: Int? = nil,
        kind: APNSSimulatorDelivery.Kind? = nil,
        limit: Int? = nil
    ) {
        self.token = token
        self.topic = topic
        self.pushType = pushType
        self.channelID = channelID
        self.status = status
        self.kind = kind
        self.limit = limit
    }

    func matches(_ delivery: APNSSimulatorDelivery) -> Bool {
        if let token, delivery.token != token.lowercased() { return false }
        if let topic, delivery.topic != topic { return false }
        if let pushType, delivery.pushType != pushType { return false }
        if let channelID, delivery.channelID != channelID { return false }
        if let status, delivery.status != status { return false }
        if let kind, delivery.kind != kind { return false }
        return true
    }
}

/// The most recent deliveries, oldest overwritten first once `capacity` is reached.
struct DeliveryLog: Sendable {
    let capacity: Int
    private var storage: [APNSSimulatorDelivery] = []
    /// Where the next record goes once the buffer is full.
    private var next = 0
    /// Records ever appended (including overwritten ones).
    private(set) var total = 0

    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    var count: Int { storage.count }

    mutating func append(_ delivery: APNSSimulatorDelivery) {
        total += 1
        if storage.count < capacity {
            storage.append(delivery)
        } else {
            storage[next] = delivery
            next = (next + 1) % capacity
        }
    }

    mutating func removeAll() {
        storage.removeAll()
        next = 0
    }

    /// Matching records, newest first.
    func newestFirst(matching filter: APNSSimulatorDeliveryFilter) -> [APNSSimulatorDelivery] {
        var result: [APNSSimulatorDelivery] = []
        let limit = filter.limit ?? Int.max
        guard limit > 0 else { return [] }
        let count = storage.count
        // The newest record sits just before `next` once the buffer has wrapped, else at the end.
        let newest = count < capacity ? count - 1 : (next - 1 + capacity) % capacity
        var index = newest
        for _ in 0..<count {
            let delivery = storage[index]
            if filter.matches(delivery) {
                result.append(delivery)
                if result.count == limit { break }
            }
            index = (index - 1 + count) % count
        }
        return result
    }
}
