extension APNSSimulator {
    // MARK: Virtual devices (the control API's /devices routes, for code)

    /// The Live Activities on the virtual device `token` (the token a push-to-start went to), in
    /// start order, as its Lock Screen shows them now.
    public func activities(device token: String) -> [APNSSimulatorActivity] {
        control.activities(device: token)
    }

    /// Every virtual device's Live Activities, by device token then start.
    public func activities() -> [APNSSimulatorActivity] {
        control.allActivities()
    }

    /// The user taps Allow under the activity: it becomes allowed and, when its push-to-start
    /// carried `input-push-token: 1` and it is still active, gets an update token registered for
    /// `<bundle ID>.push-type.liveactivity`.
    ///
    /// - Returns: the update token, or `nil` when the activity asked for none (a channel activity,
    ///   say) or has ended.
    /// - Throws: ``APNSSimulatorError`` when the device has no such activity, or the token registry
    ///   is full (``Configuration/tokenLimit``).
    @discardableResult
    public func allowActivity(device token: String, id activityID: String) throws -> String? {
        switch control.allowActivity(device: token, id: activityID) {
        case .success(let activity):
            return activity.updateToken
        case .failure(.unknownActivity):
            throw APNSSimulatorError("the virtual device has no activity \(activityID)")
        case .failure(.tokenLimit(let limit)):
            throw APNSSimulatorError("the simulator already holds \(limit) device tokens: no update token can be made")
        }
    }
}
