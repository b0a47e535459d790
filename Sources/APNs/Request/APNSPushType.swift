/// The kind of notification: the `apns-push-type` header, and with it the topic suffix, the
/// priorities Apple allows and the payload size limit (APNS.md §4, §5).
///
/// A struct with static members rather than an enum, so that a push type Apple adds later is not a
/// breaking change for code that switches over these.
///
/// ```swift
/// let type = APNSPushType.liveActivity
/// type.headerValue                             // "liveactivity"
/// type.topic(forBundleID: "com.example.app")   // "com.example.app.push-type.liveactivity"
/// ```
public struct APNSPushType: Sendable, Hashable, CustomStringConvertible {
    private enum Kind: String, CaseIterable {
        case alert, background, location, voip, complication, fileprovider, mdm, liveactivity, pushtotalk
        case widgets, controls
    }

    private let kind: Kind

    private init(_ kind: Kind) {
        self.kind = kind
    }

    /// A visible alert, sound or badge. Topic: the bundle ID.
    public static let alert = APNSPushType(.alert)
    /// Content delivered in the background (`content-available: 1`). Topic: the bundle ID; priority 5 only.
    public static let background = APNSPushType(.background)
    /// A location query for a Location Push Service Extension. Topic: `<bundle ID>.location-query`.
    public static let location = APNSPushType(.location)
    /// A PushKit VoIP call. Topic: `<bundle ID>.voip`; payload up to 5120 bytes.
    public static let voip = APNSPushType(.voip)
    /// A watchOS complication update. Topic: `<bundle ID>.complication`.
    public static let complication = APNSPushType(.complication)
    /// A File Provider change signal. Topic: `<bundle ID>.pushkit.fileprovider`.
    public static let fileProvider = APNSPushType(.fileprovider)
    /// A device-management wake-up. Topic: the UID in the MDM push certificate's subject, used as given.
    public static let mdm = APNSPushType(.mdm)
    /// A Live Activity start, update or end. Topic: `<bundle ID>.push-type.liveactivity`.
    public static let liveActivity = APNSPushType(.liveactivity)
    /// A Push to Talk update. Topic: `<bundle ID>.voip-ptt`.
    public static let pushToTalk = APNSPushType(.pushtotalk)
    /// A WidgetKit widget reload (`content-changed`). Topic: `<bundle ID>.push-type.widgets`.
    public static let widgets = APNSPushType(.widgets)
    /// A control (Control Center, Lock Screen) reload. Topic: `<bundle ID>.push-type.controls`.
    public static let controls = APNSPushType(.controls)

    /// Every push type this version knows, in Apple's documentation order.
    public static let allCases: [APNSPushType] = [
        .alert, .background, .location, .voip, .complication, .fileProvider, .mdm, .liveActivity, .pushToTalk,
        .widgets, .controls,
    ]

    /// Parses an `apns-push-type` header value. The comparison is exact: APNs documents the values
    /// in lowercase and the samples send them so.
    public init?(headerValue: String) {
        guard let kind = Kind(rawValue: headerValue) else { return nil }
        self.kind = kind
    }

    /// Parses a push type given by a person or an API caller: an `apns-push-type` value, exactly.
    ///
    /// - Throws: ``APNSValidationError`` with code ``APNSValidationError/Code/badPushType`` whose
    ///   message lists the accepted values.
    public init(validating name: String) throws(APNSValidationError) {
        guard let type = APNSPushType(headerValue: name) else {
            let accepted = Self.allCases.map(\.headerValue).joined(separator: ", ")
            let shown = name.count <= 32 && APNSRequestChecks.isHeaderSafe(name) ? "\"\(name)\"" : "the value"
            throw APNSValidationError(
                code: .badPushType,
                field: "push_type",
                message: "\(shown) is not an APNs push type: use one of \(accepted)"
            )
        }
        self = type
    }

    /// The `apns-push-type` header value.
    public var headerValue: String { kind.rawValue }

    /// What APNs expects after the bundle ID in `apns-topic`. Empty for ``alert``, ``background``
    /// and ``mdm`` (whose topic is the certificate UID, used as given).
    public var topicSuffix: String {
        switch kind {
        case .alert, .background, .mdm: ""
        case .location: ".location-query"
        case .voip: ".voip"
        case .complication: ".complication"
        case .fileprovider: ".pushkit.fileprovider"
        case .liveactivity: ".push-type.liveactivity"
        case .pushtotalk: ".voip-ptt"
        case .widgets: ".push-type.widgets"
        case .controls: ".push-type.controls"
        }
    }

    /// The `apns-topic` for an app: `bundleID` plus ``topicSuffix``. A `bundleID` that already
    /// ends with the suffix is returned unchanged.
    public func topic(forBundleID bundleID: String) -> String {
        let suffix = topicSuffix
        if suffix.isEmpty || bundleID.hasSuffix(suffix) { return bundleID }
        return bundleID + suffix
    }

    /// The priorities Apple allows for this type, highest first. Background pushes must use 5
    /// ("using priority 10 is an error"); location and device Live Activity pushes use 10 or 5;
    /// Apple does not constrain the others.
    public var allowedPriorities: [APNSPriority] {
        switch kind {
        case .background: [.consideringDevicePower]
        case .location, .liveactivity: [.immediately, .consideringDevicePower]
        default: [.immediately, .consideringDevicePower, .prioritizingPower]
        }
    }

    /// Whether ``allowedPriorities`` contains `priority`, without building the array (checked for
    /// every push).
    public func allows(_ priority: APNSPriority) -> Bool {
        switch kind {
        case .background: priority == .consideringDevicePower
        case .location, .liveactivity: priority != .prioritizingPower
        default: true
        }
    }

    /// The priority sent when a request does not choose one: 5 for background pushes, else 10
    /// (which is also what APNs assumes without the header).
    public var defaultPriority: APNSPriority {
        kind == .background ? .consideringDevicePower : .immediately
    }

    /// The largest JSON payload APNs accepts for this type, in bytes: 5120 for VoIP, 4096 otherwise.
    public var maxPayloadSize: Int {
        kind == .voip ? 5120 : 4096
    }

    public var description: String { headerValue }
}
