public import HeraldCore

/// The body of an alert push: the `aps` keys Apple defines, plus the app's own top-level keys.
///
/// ```swift
/// var payload = APNSAlertPayload(alert: APNSAlert(title: "Order shipped", body: "Arrives Tuesday"))
/// payload.sound = .default
/// payload.threadID = "orders"
/// payload.custom = ["order_id": "A-1042"]
/// // {"aps":{"alert":{"body":"Arrives Tuesday","title":"Order shipped"},"sound":"default",
/// //  "thread-id":"orders"},"order_id":"A-1042"}
/// ```
public struct APNSAlertPayload: APNSPayload, Hashable, Encodable {
    public var alert: APNSAlert?
    public var sound: APNSSound?
    public var badge: Int?
    /// `thread-id`: groups notifications.
    public var threadID: String?
    /// The notification category (actions).
    public var category: String?
    /// `mutable-content: 1` lets a Notification Service Extension change the notification.
    public var mutableContent: Bool
    /// `content-available: 1` also wakes the app in the background.
    public var contentAvailable: Bool
    public var interruptionLevel: APNSInterruptionLevel?
    /// `relevance-score`, 0 to 1: ordering in the notification summary.
    public var relevanceScore: Double?
    /// `target-content-id`: the window or content to bring forward.
    public var targetContentID: String?
    /// `filter-criteria`: which Focus filter the notification belongs to.
    public var filterCriteria: String?
    /// The app's own keys, beside `aps`. A key named `aps` makes encoding fail.
    public var custom: [String: APNSJSONValue]

    public init(
        alert: APNSAlert? = nil,
        sound: APNSSound? = nil,
        badge: Int? = nil,
        threadID: String? = nil,
        category: String? = nil,
        mutableContent: Bool = false,
        contentAvailable: Bool = false,
        interruptionLevel: APNSInterruptionLevel? = nil,
        relevanceScore: Double? = nil,
        targetContentID: String? = nil,
        filterCriteria: String? = nil,
        custom: [String: APNSJSONValue] = [:]
    ) {
        self.alert = alert
        self.sound = sound
        self.badge = badge
        self.threadID = threadID
        self.category = category
        self.mutableContent = mutableContent
        self.contentAvailable = contentAvailable
        self.interruptionLevel = interruptionLevel
        self.relevanceScore = relevanceScore
        self.targetContentID = targetContentID
        self.filterCriteria = filterCriteria
        self.custom = custom
    }

    private struct APS: Encodable {
        var payload: APNSAlertPayload

        enum CodingKeys: String, CodingKey {
            case alert, sound, badge, category
            case threadID = "thread-id"
            case mutableContent = "mutable-content"
            case contentAvailable = "content-available"
            case interruptionLevel = "interruption-level"
            case relevanceScore = "relevance-score"
            case targetContentID = "target-content-id"
            case filterCriteria = "filter-criteria"
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encodeIfPresent(payload.alert, forKey: .alert)
            try container.encodeIfPresent(payload.sound, forKey: .sound)
            try container.encodeIfPresent(payload.badge, forKey: .badge)
            try container.encodeIfPresent(payload.threadID, forKey: .threadID)
            try container.encodeIfPresent(payload.category, forKey: .category)
            if payload.mutableContent { try container.encode(1, forKey: .mutableContent) }
            if payload.contentAvailable { try container.encode(1, forKey: .contentAvailable) }
            try container.encodeIfPresent(payload.interruptionLevel, forKey: .interruptionLevel)
            try container.encodeIfPresent(payload.relevanceScore, forKey: .relevanceScore)
            try container.encodeIfPresent(payload.targetContentID, forKey: .targetContentID)
            try container.encodeIfPresent(payload.filterCriteria, forKey: .filterCriteria)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: APNSDynamicKey.self)
        try container.encode(APS(payload: self), forKey: APNSDynamicKey("aps"))
        try container.encodeCustomKeys(custom)
    }
}
