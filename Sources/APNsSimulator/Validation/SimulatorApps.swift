import APNs

/// The apps a simulator serves, by bundle ID, and which topics that allows.
///
/// With no bundle IDs configured every well-formed bundle ID is served (handy for a first try);
/// with some, any other topic is refused as APNs refuses topics a key may not push to.
struct SimulatorApps: Sendable {
    var bundleIDs: Set<String>
    /// Apps without the Broadcast Capability: their channel and broadcast requests get
    /// `FeatureNotEnabled`.
    var broadcastDisabled: Set<String>

    init(bundleIDs: some Sequence<String>, broadcastDisabled: some Sequence<String> = []) {
        self.bundleIDs = Set(bundleIDs)
        self.broadcastDisabled = Set(broadcastDisabled)
    }

    func serves(_ bundleID: String) -> Bool {
        bundleIDs.isEmpty || bundleIDs.contains(bundleID)
    }

    /// The app an `apns-topic` addresses for `pushType`, or `TopicDisallowed` when the topic does
    /// not carry the push type's suffix (`.voip`, `.push-type.liveactivity`, …), carries another
    /// type's suffix, or names an app the simulator does not serve. MDM topics are used as given.
    func bundleID(forTopic topic: String, pushType: APNSPushType) -> Result<String, SimulatorRejection> {
        let bundleID: String
        let suffix = pushType.topicSuffix
        if pushType == .mdm {
            bundleID = topic
        } else if !suffix.isEmpty {
            guard topic.hasSuffix(suffix), topic.utf8.count > suffix.utf8.count else {
                return .failure(.badRequest(.topicDisallowed))
            }
            bundleID = String(topic.dropLast(suffix.count))
        } else {
            if bundleIDs.isEmpty, HeaderRules.pushTypeSuffix(of: topic) != nil {
                return .failure(.badRequest(.topicDisallowed))
            }
            bundleID = topic
        }
        guard serves(bundleID) else { return .failure(.badRequest(.topicDisallowed)) }
        return .success(bundleID)
    }

    /// Checks the bundle ID of a broadcast or channel management path: a push-type suffix is
    /// `TopicDisallowed` (APNs wants the bare bundle ID), an app not served is 403
    /// `TopicMismatch`, an app without the capability `FeatureNotEnabled`.
    func checkBroadcastApp(_ bundleID: String) -> SimulatorRejection? {
        if !bundleIDs.contains(bundleID), HeaderRules.pushTypeSuffix(of: bundleID) != nil {
            return .badRequest(.topicDisallowed)
        }
        if !HeaderRules.isWellFormedTopic(bundleID) { return .badRequest(.topicDisallowed) }
        if !serves(bundleID) { return .forbidden(.topicMismatch) }
        if broadcastDisabled.contains(bundleID) { return .badRequest(.featureNotEnabled) }
        return nil
    }
}
