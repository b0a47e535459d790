public import Foundation

/// How long APNs keeps a notification it cannot deliver yet: the `apns-expiration` header.
public enum APNSExpiration: Sendable, Hashable {
    /// No header: APNs applies its own storage policy (it may keep the notification up to 30 days).
    case omitted
    /// `0`: try once and do not store.
    case immediately
    /// Store and retry until this moment, sent as whole UNIX seconds (rounded down).
    case at(Date)

    /// The header value, or `nil` for ``omitted``.
    public var headerValue: String? {
        switch self {
        case .omitted: nil
        case .immediately: "0"
        case .at(let date): String(Self.epochSeconds(date))
        }
    }

    static func epochSeconds(_ date: Date) -> Int64 {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        guard seconds.isFinite else { return 0 }
        return Int64(max(min(seconds, Double(Int64.max / 2)), Double(Int64.min / 2)))
    }
}
