/// How a push ended: APNs accepted it, or refused it for good (after any retries).
public enum APNSSendResult: Sendable, Hashable {
    case delivered(APNSDelivery)
    case rejected(APNSRejection)

    public var isDelivered: Bool {
        if case .delivered = self { return true }
        return false
    }

    /// The refusal, when there is one.
    public var rejection: APNSRejection? {
        if case .rejected(let rejection) = self { return rejection }
        return nil
    }
}
