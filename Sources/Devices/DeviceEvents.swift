public import Storage

/// Hears about devices that became invalid, or moved to another user, inside the transaction that
/// changed them: what it writes (a webhook event, say) commits or rolls back with the change, so an
/// event is never lost nor sent for a change that did not happen.
///
/// ``devicesInvalidated(_:on:)`` is called once per batch of invalidations of one (app,
/// environment), only for devices that moved from active (or unknown) to invalid; a token already
/// invalid is not reported again. Devices a user's quota evicts are reported the same way, with
/// the reason `evicted`.
public protocol DeviceEvents: Sendable {
    /// Records `events` using `executor`, the invalidating transaction. Throwing rolls it back.
    func devicesInvalidated(_ events: [DeviceInvalidatedEvent], on executor: any DatabaseExecutor) async throws

    /// Records `events` (tokens registered to another user than before) using `executor`, the
    /// registering transaction. Throwing rolls it back. Does nothing unless implemented.
    func devicesReassigned(_ events: [DeviceReassignedEvent], on executor: any DatabaseExecutor) async throws

    /// Called after a transaction in which ``devicesInvalidated(_:on:)`` or
    /// ``devicesReassigned(_:on:)`` was called has committed (to wake a job worker that delivers
    /// what it recorded). Does nothing unless implemented.
    func invalidationsCommitted()
}

extension DeviceEvents {
    public func devicesReassigned(_ events: [DeviceReassignedEvent], on executor: any DatabaseExecutor) async throws {}

    public func invalidationsCommitted() {}
}
