import APNs
import Foundation
import HeraldCore

extension Audience {
    /// Parses an audience object out of a body already through the strict JSON check
    /// (`HeraldCore/JSONValue.check`) and `JSONSerialization`.
    ///
    /// - Parameters:
    ///   - value: the value of the audience field.
    ///   - field: its JSON path, the prefix of every error's `field` (`audience`).
    /// - Throws: ``AudienceError`` naming the exact path at fault.
    public static func parse(_ value: Any?, field: String = "audience") throws(AudienceError) -> Audience {
        let shape =
            "{\"tokens\": […]}, {\"users\": […]}, {\"tags\": {\"any\": […]}}, {\"tags\": {\"all\": […]}} "
            + "or {\"all\": true}"
        guard let value, !(value is NSNull) else {
            throw AudienceError(
                code: "missing_field",
                message: "\(field) is missing: send one of \(shape)",
                field: field
            )
        }
        guard let object = value as? [String: Any] else {
            throw AudienceError(code: "invalid_audience", message: "\(field) must be one of \(shape)", field: field)
        }
        let known = ["all", "tags", "tokens", "users"]
        for key in object.keys.sorted() where !known.contains(key) {
            throw AudienceError(
                code: "unknown_field",
                message:
                    "\(quoted(key)) is not a kind of audience: use exactly one of \(known.joined(separator: ", "))",
                field: "\(field).\(key.prefix(64))"
            )
        }
        let keys = object.keys.sorted()
        guard keys.count == 1, let key = keys.first, let content = object[key] else {
            throw AudienceError(
                code: keys.isEmpty ? "empty_audience" : "ambiguous_audience",
                message: keys.isEmpty
                    ? "\(field) is empty: send one of \(shape)"
                    : "\(field) has \(keys.joined(separator: " and ")): send exactly one kind of audience",
                field: field
            )
        }
        let path = "\(field).\(key)"
        switch key {
        case "tokens":
            return .tokens(try parseTokens(content, field: path))
        case "users":
            return .users(try parseUsers(content, field: path))
        case "tags":
            return .tags(try parseTags(content, field: path))
        default:
            guard isTrue(content) else {
                throw AudienceError(
                    code: "invalid_all",
                    message: "\(path) must be true (every active device); to send to fewer, use tokens, users or tags",
                    field: path
                )
            }
            return .all
        }
    }

    /// Device tokens: 1 to ``AudienceLimits/maximumTokens``, each normalized to lowercase hex,
    /// none twice. Errors name `field` (`tokens`, or `audience.tokens`) and the index.
    public static func parseTokens(_ value: Any?, field: String) throws(AudienceError) -> [String] {
        let limit = AudienceLimits.maximumTokens
        guard let value, !(value is NSNull) else {
            throw AudienceError(
                code: "missing_field",
                message: "\(field) is missing: list 1 to 10,000 device tokens",
                field: field
            )
        }
        guard let array = value as? [Any] else {
            throw AudienceError(
                code: "invalid_tokens",
                message: "\(field) must be an array of hexadecimal device tokens",
                field: field
            )
        }
        guard !array.isEmpty else {
            throw AudienceError(
                code: "invalid_tokens",
                message: "\(field) is empty: list at least one device token",
                field: field
            )
        }
        guard array.count <= limit else {
            throw AudienceError(
                code: "too_many_tokens",
                message: "\(field) has \(array.count) entries: send at most \(limit) per notification and split the "
                    + "rest over more notifications, or register the devices and send to users, tags or all",
                field: field,
                isTooLarge: true
            )
        }
        var tokens: [String] = []
        tokens.reserveCapacity(array.count)
        var seen = Set<String>(minimumCapacity: array.count)
        for (index, element) in array.enumerated() {
            let at = "\(field)[\(index)]"
            guard let text = element as? String else {
                throw AudienceError(code: "invalid_token", message: "\(at) is not a string", field: at)
            }
            let token: String
            do {
                token = try APNSDeviceToken.normalized(text)
            } catch {
                throw AudienceError(code: "invalid_token", message: "\(at): \(error.message)", field: at)
            }
            guard seen.insert(token).inserted else {
                throw AudienceError(
                    code: "duplicate_token",
                    message: "\(at) repeats an earlier token: list each device once",
                    field: at
                )
            }
            tokens.append(token)
        }
        return tokens
    }

    private static func parseUsers(_ value: Any, field: String) throws(AudienceError) -> [String] {
        let limit = AudienceLimits.maximumUsers
        guard let array = value as? [Any], !array.isEmpty else {
            throw AudienceError(
                code: "invalid_users",
                message: "\(field) must be an array of 1 to \(limit) user ids (the user_id devices registered with)",
                field: field
            )
        }
        guard array.count <= limit else {
            throw AudienceError(
                code: "too_many_users",
                message: "\(field) has \(array.count) entries: send at most \(limit) per notification and split the "
                    + "rest over more notifications, or tag the devices and send to the tag",
                field: field,
                isTooLarge: true
            )
        }
        return try uniqueStrings(array, field: field, what: "user id", code: "user") { text in
            text.isEmpty || text.utf8.count > AudienceLimits.maximumUserIDBytes
                ? "must be 1 to \(AudienceLimits.maximumUserIDBytes) bytes, the user_id devices registered with"
                : nil
        }
    }

    private static func parseTags(_ value: Any, field: String) throws(AudienceError) -> TagMatch {
        guard let object = value as? [String: Any] else {
            throw AudienceError(
                code: "invalid_tags",
                message: "\(field) must be {\"any\": [tags]} or {\"all\": [tags]}",
                field: field
            )
        }
        for key in object.keys.sorted() where key != "any" && key != "all" {
            throw AudienceError(
                code: "unknown_field",
                message: "\(quoted(key)) is not a tag match: use \"any\" (at least one tag) or \"all\" (every tag)",
                field: "\(field).\(key.prefix(64))"
            )
        }
        guard object.count == 1, let key = object.keys.first, let content = object[key] else {
            throw AudienceError(
                code: object.isEmpty ? "invalid_tags" : "ambiguous_tags",
                message: object.isEmpty
                    ? "\(field) is empty: send {\"any\": [tags]} or {\"all\": [tags]}"
                    : "\(field) has any and all: send one of them (all of the tags, or at least one)",
                field: field
            )
        }
        let path = "\(field).\(key)"
        let limit = AudienceLimits.maximumTags
        let length = AudienceLimits.tagLength
        guard let array = content as? [Any], !array.isEmpty else {
            throw AudienceError(
                code: "invalid_tags",
                message: "\(path) must be an array of 1 to \(limit) tags",
                field: path
            )
        }
        guard array.count <= limit else {
            throw AudienceError(
                code: "too_many_tags",
                message: "\(path) has \(array.count) tags: send at most \(limit) (a device carries at most \(limit))",
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
        _ array: [Any],
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
            guard let text = element as? String else {
                throw AudienceError(code: "invalid_\(code)", message: "\(at) must be a string (a \(what))", field: at)
            }
            if let problem = check(text) {
                throw AudienceError(code: "invalid_\(code)", message: "\(at) \(problem)", field: at)
            }
            guard seen.insert(text).inserted else {
                throw AudienceError(
                    code: "duplicate_\(code)",
                    message: "\(at) repeats an earlier \(what): list each once",
                    field: at
                )
            }
            values.append(text)
        }
        return values
    }

    /// A JSON `true` (not the number 1, which JSONSerialization on Linux also bridges to `Bool`).
    private static func isTrue(_ value: Any) -> Bool {
        guard let number = value as? NSNumber, String(cString: number.objCType) == "c" else { return false }
        return number.boolValue
    }

    private static func quoted(_ key: String) -> String {
        key.utf8.count <= 64 ? "\"\(key)\"" : "a field"
    }
}

extension Audience {
    /// The audience as the JSON object it was given in (keys sorted), for storage and display.
    public var jsonObject: [String: Any] {
        switch self {
        case .tokens(let tokens): ["tokens": tokens]
        case .users(let users): ["users": users]
        case .tags(.any(let tags)): ["tags": ["any": tags]]
        case .tags(.all(let tags)): ["tags": ["all": tags]]
        case .all: ["all": true]
        }
    }

    /// ``jsonObject`` as compact JSON text.
    public var jsonText: String {
        let data = (try? JSONSerialization.data(withJSONObject: jsonObject, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    /// Reads back ``jsonText``; `nil` when the text is not an audience.
    public init?(jsonText: String) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(jsonText.utf8)),
            let audience = try? Audience.parse(object)
        else { return nil }
        self = audience
    }
}
