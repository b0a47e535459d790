import HTTP2

/// One request as the simulator checks it: `:method`, `:path`, the regular header fields in the
/// order received (duplicates kept) and the body. The HTTP/2 server fills it; tests build it.
struct SimulatorRequest: Sendable {
    var method: String
    var path: String
    var headers: HTTP2Headers {
        didSet { known = KnownHeaders(headers) }
    }
    var body: [UInt8]
    /// The APNs fields, read in one pass: every check looks some of them up.
    private var known: KnownHeaders

    init(method: String = "POST", path: String, headers: HTTP2Headers = [:], body: [UInt8] = []) {
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
        self.known = KnownHeaders(headers)
    }

    /// The first value of `name` (lowercase), or `nil`.
    func header(_ name: String) -> String? {
        switch name {
        case "authorization": known.authorization
        case "apns-topic": known.topic
        case "apns-push-type": known.pushType
        case "apns-priority": known.priority
        case "apns-id": known.id
        case "apns-expiration": known.expiration
        case "apns-collapse-id": known.collapseID
        case "apns-channel-id": known.channelID
        case "apns-request-id": known.requestID
        default: headers[name]
        }
    }

    /// Whether any field name appears twice (APNs: `DuplicateHeaders`). Header names arrive in
    /// lowercase (HTTP/2 requires it, and nghttp2 enforces it), so names compare exactly.
    var hasDuplicateHeaders: Bool {
        let count = headers.count
        guard count > 1 else { return false }
        if count <= 16 {
            for index in 0..<count {
                let name = headers[index].name
                for other in (index + 1)..<count where headers[other].name == name { return true }
            }
            return false
        }
        var seen = Set<String>(minimumCapacity: count)
        for field in headers where !seen.insert(field.name).inserted { return true }
        return false
    }
}

/// The first value of each header field the checks read. HTTP/2 field names are lowercase (nghttp2
/// refuses others), so they compare exactly.
private struct KnownHeaders: Sendable {
    var authorization: String?
    var topic: String?
    var pushType: String?
    var priority: String?
    var id: String?
    var expiration: String?
    var collapseID: String?
    var channelID: String?
    var requestID: String?

    init(_ headers: HTTP2Headers) {
        for field in headers {
            switch field.name {
            case "authorization": authorization = authorization ?? field.value
            case "apns-topic": topic = topic ?? field.value
            case "apns-push-type": pushType = pushType ?? field.value
            case "apns-priority": priority = priority ?? field.value
            case "apns-id": id = id ?? field.value
            case "apns-expiration": expiration = expiration ?? field.value
            case "apns-collapse-id": collapseID = collapseID ?? field.value
            case "apns-channel-id": channelID = channelID ?? field.value
            case "apns-request-id": requestID = requestID ?? field.value
            default: break
            }
        }
    }
}

/// What a `:path` asks for.
enum SimulatorRoute: Sendable, Hashable {
    /// `/3/device/<token>`; the token as it appears in the path (possibly empty or malformed).
    case device(token: String)
    /// `/4/broadcasts/apps/<bundle ID>`.
    case broadcast(bundleID: String)
    /// `/1/apps/<bundle ID>/channels`.
    case channels(bundleID: String)
    /// `/1/apps/<bundle ID>/all-channels`.
    case allChannels(bundleID: String)
    /// Anything else: 404 `BadPath`.
    case unknown

    /// A device push or a broadcast (not channel management).
    var isPush: Bool {
        switch self {
        case .device, .broadcast: true
        case .channels, .allChannels, .unknown: false
        }
    }

    init(path: String) {
        if path == "/3/device" {
            self = .device(token: "")
        } else if path.hasPrefix("/3/device/") {
            self = .device(token: String(path.dropFirst(10)))
        } else if path.hasPrefix("/4/broadcasts/apps/") {
            let bundleID = String(path.dropFirst(19))
            self = Self.isSegment(bundleID) ? .broadcast(bundleID: bundleID) : .unknown
        } else if path.hasPrefix("/1/apps/") {
            let rest = path.dropFirst(8).split(separator: "/", omittingEmptySubsequences: false)
            guard rest.count == 2, Self.isSegment(String(rest[0])) else {
                self = .unknown
                return
            }
            let bundleID = String(rest[0])
            switch rest[1] {
            case "channels": self = .channels(bundleID: bundleID)
            case "all-channels": self = .allChannels(bundleID: bundleID)
            default: self = .unknown
            }
        } else {
            self = .unknown
        }
    }

    /// The methods the path accepts; others get 405 `MethodNotAllowed`.
    var allowedMethods: Set<String> {
        switch self {
        case .device, .broadcast: ["POST"]
        case .channels: ["POST", "GET", "DELETE"]
        case .allChannels: ["GET"]
        case .unknown: []
        }
    }

    private static func isSegment(_ text: String) -> Bool {
        !text.isEmpty && !text.utf8.contains(UInt8(ascii: "/")) && !text.utf8.contains(UInt8(ascii: "?"))
    }
}
