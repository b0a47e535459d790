/// The tags a client token may set on its user's devices (`HERALD_CLIENT_TAGS`): exact tags, and
/// prefixes written with a trailing `*` (`lang-*` allows `lang-en`; `*` alone allows every tag).
/// Tags mark segments that backends push to (`staff`, `vip`), so a client may set none unless the
/// operator lists it; the API key may set any tag.
///
/// ```swift
/// let policy = try ClientTagPolicy.parse("news,lang-*")
/// policy.allows("lang-fr")  // true
/// policy.allows("staff")    // false
/// ```
public struct ClientTagPolicy: Sendable, Hashable, CustomStringConvertible {
    /// Tags allowed exactly.
    public private(set) var tags: Set<String>
    /// Prefixes, sorted: a tag that starts with one is allowed.
    public private(set) var prefixes: [String]

    /// Entries at most in the setting.
    public static let maximumEntries = 1_000

    /// No tag allowed: the default.
    public static let noTags = ClientTagPolicy(tags: [], prefixes: [])

    init(tags: Set<String>, prefixes: [String]) {
        self.tags = tags
        self.prefixes = prefixes
    }

    /// Whether a client may set `tag`.
    public func allows(_ tag: String) -> Bool {
        tags.contains(tag) || prefixes.contains { tag.unicodeScalars.starts(with: $0.unicodeScalars) }
    }

    /// No tag at all is allowed.
    public var allowsNone: Bool { tags.isEmpty && prefixes.isEmpty }

    /// Why a value is not a tag list.
    public struct ParseError: Error, Sendable, Hashable, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    /// Parses the setting's value: comma-separated entries, spaces around each ignored; an empty
    /// value allows no tag.
    ///
    /// - Throws: ``ParseError`` naming the entry at fault: an empty entry, a `*` anywhere but at
    ///   the end, a tag over ``DeviceLimits/maximumTagCharacters`` characters, a control
    ///   character, or more than ``maximumEntries`` entries.
    public static func parse(_ text: String) throws(ParseError) -> ClientTagPolicy {
        // Split and trimmed on Unicode scalars, not characters: a combining mark after a comma
        // must not hide the comma.
        var policy = ClientTagPolicy.noTags
        let trimmed = trimmingSpaces(Substring(text).unicodeScalars)
        guard !trimmed.isEmpty else { return policy }
        let entries = trimmed.split(separator: ",", omittingEmptySubsequences: false)
        guard entries.count <= maximumEntries else {
            throw ParseError(message: "lists \(entries.count) tags: list at most \(maximumEntries)")
        }
        for (index, raw) in entries.enumerated() {
            let entry = trimmingSpaces(raw)
            let position = "entry \(index + 1)"
            guard !entry.isEmpty else {
                throw ParseError(message: "\(position) is empty: separate tags with single commas, e.g. news,lang-*")
            }
            guard !entry.contains(where: { $0.properties.generalCategory == .control }) else {
                throw ParseError(message: "\(position) holds a control character: tags are printable text")
            }
            let isPrefix = entry.last == "*"
            let body = isPrefix ? entry.dropLast() : entry
            guard !body.contains("*") else {
                throw ParseError(
                    message: "\(position) (\"\(String(String(entry).prefix(80)))\") has a * before its end: "
                        + "only a trailing * is allowed, meaning any tag with that prefix"
                )
            }
            let tag = String(body)
            guard tag.count <= DeviceLimits.maximumTagCharacters else {
                throw ParseError(
                    message: "\(position) is \(tag.count) characters: a tag has at most "
                        + "\(DeviceLimits.maximumTagCharacters)"
                )
            }
            if isPrefix {
                if !policy.prefixes.contains(tag) { policy.prefixes.append(tag) }
            } else {
                policy.tags.insert(tag)
            }
        }
        policy.prefixes.sort()
        return policy
    }

    /// `scalars` without leading and trailing spaces and tabs.
    private static func trimmingSpaces(_ scalars: Substring.UnicodeScalarView) -> Substring.UnicodeScalarView {
        let isSpace: (Unicode.Scalar) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = scalars.firstIndex(where: { !isSpace($0) }),
            let last = scalars.lastIndex(where: { !isSpace($0) })
        else { return Substring.UnicodeScalarView() }
        return scalars[first...last]
    }

    /// The list as the setting writes it, sorted.
    public var description: String {
        (tags.sorted() + prefixes.sorted().map { $0 + "*" }).joined(separator: ",")
    }
}
