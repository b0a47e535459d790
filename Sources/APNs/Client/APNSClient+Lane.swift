extension APNSClient {
    /// This client's connections, provider token, retry policy and clock, with pushes counted in
    /// `budget` instead of this client's: a lane of its own. What it sends never takes room in
    /// the other budget, and waits or is refused only by `budget`. The relay sends through such a
    /// client, so that no amount of relay traffic delays `/v1`'s sends.
    ///
    /// What its ``send(_:completion:)`` cannot finish at once runs in its own ``run()``.
    public func sharingConnections(budget: APNSSendBudget) -> APNSClient {
        APNSClient(
            shared: Shared(
                transport: shared.transport,
                tokenProvider: shared.tokenProvider,
                retryPolicy: shared.retryPolicy,
                budget: budget,
                logger: shared.logger,
                clock: shared.clock,
                random: shared.random,
                followUps: FollowUps()
            )
        )
    }
}
