import HeraldCore

/// A channel's settings, as a read answers them: `{"message-storage-policy":n,"push-type":"LiveActivity"}`.
public struct APNSChannelConfiguration: Sendable, Hashable {
    public var storagePolicy: APNSChannelMessageStoragePolicy
    public var pushType: String

    public init(storagePolicy: APNSChannelMessageStoragePolicy, pushType: String = "LiveActivity") {
        self.storagePolicy = storagePolicy
        self.pushType = pushType
    }

    /// Reads a read-channel response body; `nil` when it is not that document.
    public init?(parsing body: [UInt8]) {
        guard let object = (try? APNSJSONValue(parsing: body))?.objectValue,
            case .integer(let number)? = object["message-storage-policy"],
            let policy = APNSChannelMessageStoragePolicy(rawValue: Int(number)),
            let pushType = object["push-type"]?.stringValue
        else { return nil }
        self.init(storagePolicy: policy, pushType: pushType)
    }
}

/// The ids a list-channels response holds: `{"channels":["…", …]}`.
public enum APNSChannelList {
    /// Reads a list response body; `nil` when it is not that document.
    public static func parse(_ body: [UInt8]) -> [APNSChannelID]? {
        guard case .array(let items)? = (try? APNSJSONValue(parsing: body))?["channels"] else { return nil }
        var ids: [APNSChannelID] = []
        for item in items {
            guard let text = item.stringValue else { return nil }
            ids.append(APNSChannelID(rawValue: text))
        }
        return ids
    }
}
