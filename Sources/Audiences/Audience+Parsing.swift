import APNs
public import HeraldCore

extension Audience {
    /// The shapes an audience takes, for messages.
    static let shape =
        "{\"tokens\": […]}, {\"users\": […]}, {\"tags\": {\"any\": […]}}, {\"tags\": {\"all\": […]}} "
        + "or {\"all\": true}"

    /// Parses an audience object out of a body read with the one strict grammar
    /// (`HeraldCore/JSONObjectReader`).
    ///
    /// - Parameters:
    ///   - value: the value of the audience field; `nil` when absent or `null`.
    ///   - field: its JSON path, the prefix of every error's `field` (`audience`).
    /// - Throws: ``AudienceError`` naming the exact path at fault.
    public static func parse(_ value: JSONValue?, field: String = "audience") throws(AudienceError) -> Audience {
        guard let value, value != .null else {
            throw .invalid("missing_field", "\(field) is missing: send one of \(shape)", field: field)
        }
        var object = try Reader.object(
            value,
            field: field,
            what: "an audience",
            shape: "one of \(shape)",
            code: "invalid_audience"
        )
        let known = ["all", "tags", "tokens", "users"]
        try object.rejectUnknown(Set(known), hint: "use exactly one of \(known.joined(separator: ", "))")
        let keys = object.members.keys.sorted()
        guard keys.count == 1, let key = keys.first, let content = object.raw(key) else {
            throw .invalid(
                keys.isEmpty ? "empty_audience" : "ambiguous_audience",
                keys.isEmpty
                    ? "\(field) is empty: send one of \(shape)"
                    : "\(field) has \(keys.joined(separator: " and ")): send exactly one kind of audience",
                field: field
            )
        }
        let path = object.field(key)
        switch key {
        case "tokens":
            return .tokens(try parseTokens(content, field: path))
        case "users":
            return .users(try parseUsers(content, field: path))
        case "tags":
            return .tags(try parseTags(content, field: path))
        default:
            guard content == .bool(true) else {
                throw .invalid(
                    "invalid_all",
                    "\(path) must be true (every active device); to send to fewer, use tokens, users or tags",
                    field: path
                )
            }
            return .all
        }
    }

    /// Device tokens: 1 to ``AudienceLimits/maximumTokens``, each normalized to lowercase hex,
    /// none twice. Errors name `field` (`tokens`, or `audience.tokens`) and the index.
    public static func parseTokens(_ value: JSONValue?, field: String) throws(AudienceError) -> [String] {
        let limit = AudienceLimits.maximumTokens
        guard let value, value != .null else {
            throw .invalid("missing_field", "\(field) is missing: list 1 to 10,000 device tokens", field: field)
        }
        guard case .array(let array) = value else {
            throw .invalid("invalid_tokens", "\(field) must be an array of hexadecimal device tokens", field: field)
        }
        guard !array.isEmpty else {
            throw .invalid("invalid_tokens", "\(field) is empty: list at least one device token", field: field)
        }
        guard array.count <= limit else {
            throw .tooLarge(
                "too_many_tokens",
                "\(field) has \(array.count) entries: send at most \(limit) per notification and split the "
                    + "rest over more notifications, or register the devices and send to users, tags or all",
                field: field
            )
        }
        var tokens: [String] = []
        tokens.reserveCapacity(array.count)
        var seen = Set<String>(minimumCapacity: array.count)
        for (index, element) in array.enumerated() {
            let at = "\(field)[\(index)]"
            guard case .string(let text) = element else {
                throw .invalid("invalid_token", "\(at) is not a string", field: at)
            }
            let token: String
            do {
                token = try APNSDeviceToken.normalized(text)
            } catch {
                throw .invalid("invalid_token", "\(at): \(error.message)", field: at)
            }
            guard seen.insert(token).inserted else {
                throw .invalid("duplicate_token", "\(at) repeats an earlier token: list each device once", field: at)
            }
            tokens.append(token)
        }
        return tokens
    }

    private typealias Reader = JSONObjectReader<AudienceDomain>

    private static func parseUsers(_ value: JSONValue, field: String) throws(AudienceError) -> [String] {
        let limit = AudienceLimits.maximumUsers
        guard case .array(let array) = value, !array.isEmpty else {
            throw .invalid(
                "invalid_users",
                "\(field) must be an array of 1 to \(limit) user ids (the user_id devices registered with)",
                field: field
            )
        }
        guard array.count <= limit else {
            throw .tooLarge(
                "too_many_users",
                "\(field) has \(array.count) entries: send at most \(limit) per notification and split the "
                    + "rest over more notifications, or tag the devices and send to the tag",
                field: field
            )
        }
        return try uniqueStrings(array, field: field, what: "user id", code: "user") { text in
            text.isEmpty || text.utf8.count > AudienceLimits.maximumUserIDBytes
                ? "must be 1 to \(AudienceLimits.maximumUserIDBytes) bytes, the user_id devices registered with"
                : nil
        }
    }

    private static func parseTags(_ value: JSONValue, field: String) throws(AudienceError) -> TagMatch {
        var object = try Reader.object(
            value,
            field: field,
            what: "a tag match",
            shape: "{\"any\": [tags]} or {\"all\": [tags]}",
            code: "invalid_tags"
        )
        try object.rejectUnknown(["any", "all"], hint: "use \"any\" (at least one tag) or \"all\" (every tag)")
        guard object.members.count == 1, let key = object.members.keys.first, let content = object.raw(key) else {
            throw .invalid(
                object.members.isEmpty ? "invalid_tags" : "ambiguous_tags",
                object.members.isEmpty
                    ? "\(field) is empty: send {\"any\": [tags]} or {\"all\": [tags]}"
                    : "\(field) has any and all: send one of them (all of the tags, or at least one)",
                field: field
            )
        }
        let path = object.field(key)
        let limit = AudienceLimits.maximumTags
        let length = AudienceLimits.tagLength
        guard case .array(let array) = content, !array.isEmpty else {
            throw .invalid("invalid_tags", "\(path) must be an array of 1 to \(limit) tags", field: path)
        }
        guard array.count <= limit else {
            throw .invalid(
                "too_many_tags",
                "\(path) has \(array.count) tags: send at most \(limit) (a device carries at most \(limit))",
                field: path
            )
        }
        let tags = try uniqueStrings(array, field: path, what: "tag", code: "tag") { text in
            length.contains(text.count) ? nil : "must be \(length.lowerBound) to \(length.upperBound) characters"
        }
        return key == "any" ? .any(tags) : .all(tags)
    }

    /// Strings, each passing `check` (which returns what is wrong), none twice.
    private static func uniqueStrings(
        _ array: [JSONValue],
        field: String,
        what: String,
        code: String,
        check: (String) -> String?
    ) throws(AudienceError) -> [String] {
        var seen = Set<String>(minimumCapacity: array.count)
        var values: [String] = []
        values.reserveCapacity(array.count)
        for (index, element) in array.enumerated() {
            let at = "\(field)[\(index)]"
            guard case .string(let text) = element else {
                throw .invalid("invalid_\(code)", "\(at) must be a string (a \(what))", field: at)
            }
            if let problem = check(text) {
                throw .invalid("invalid_\(code)", "\(at) \(problem)", field: at)
            }
            guard seen.insert(text).inserted else {
                throw .invalid("duplicate_\(code)", "\(at) repeats an earlier \(what): list each once", field: at)
            }
            values.append(text)
        }
        return values
    }
}

extension Audience {
    /// The audience as the JSON value it was given in, for storage and display.
    public var jsonValue: JSONValue {
        switch self {
        case .tokens(let tokens): ["tokens": .array(tokens.map(JSONValue.string))]
        case .users(let users): ["users": .array(users.map(JSONValue.string))]
        case .tags(.any(let tags)): ["tags": ["any": .array(tags.map(JSONValue.string))]]
        case .tags(.all(let tags)): ["tags": ["all": .array(tags.map(JSONValue.string))]]
        case .all: ["all": true]
        }
    }

    /// ``jsonValue`` as compact JSON text, keys sorted.
    public var jsonText: String {
        String(decoding: (try? jsonValue.jsonBytes()) ?? Array("{}".utf8), as: UTF8.self)
    }

    /// Reads back ``jsonText``; `nil` when the text is not an audience.
    public init?(jsonText: String) {
        guard let value = try? JSONValue.parse(Array(jsonText.utf8)), let audience = try? Audience.parse(value)
        else { return nil }
        self = audience
    }
}
