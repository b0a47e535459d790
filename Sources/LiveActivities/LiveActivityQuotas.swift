/// What one user may hold, so that no holder of a client token grows the store without bound.
///
/// - ``maximumInstancesPerUser``: instances one user may report of one activity
///   (`HERALD_MAX_INSTANCES_PER_USER`); one more is refused (409 `too_many_instances`), as a
///   real user runs an activity on a handful of devices at most.
/// - ``maximumPushToStartTokensPerUser``: active push-to-start tokens of one user per app and
///   environment, all attributes types together (`HERALD_CLIENT_MAX_DEVICES`); one more evicts
///   the least recently registered (status `invalid`, `invalid_reason: "evicted"`), so a user
///   with many reinstalls is never refused.
public struct LiveActivityQuotas: Sendable, Hashable {
    public var maximumInstancesPerUser: Int
    public var maximumPushToStartTokensPerUser: Int

    public init(maximumInstancesPerUser: Int = 10, maximumPushToStartTokensPerUser: Int = 20) {
        self.maximumInstancesPerUser = maximumInstancesPerUser
        self.maximumPushToStartTokensPerUser = maximumPushToStartTokensPerUser
    }
}
