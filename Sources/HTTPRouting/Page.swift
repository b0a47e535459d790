public import HeraldCore

/// How every list of the API pages, in one place: `limit` (a whole number from 1 to
/// ``maximumLimit``, ``defaultLimit`` when absent) and `cursor` (the previous page's
/// `next_cursor`, unchanged). Every answer is `{"<items>": [...], "next_cursor": "…" | null}`:
/// `next_cursor` is always there, `null` on the last page.
public enum Paging {
    public static let defaultLimit = 100
    public static let maximumLimit = 1_000
    /// The query parameters every list takes, after its own filters.
    public static let parameters = ["limit", "cursor"]

    /// The refusal of a `cursor` that is not a `next_cursor` this list answered.
    public static func invalidCursor() -> HTTPError {
        HTTPError(
            status: 400,
            code: "invalid_cursor",
            message: "cursor is not one this list returned: pass next_cursor from the previous page unchanged, "
                + "or leave it out for the first page",
            field: "cursor"
        )
    }
}

extension HTTPRequest {
    /// The `limit` query parameter of a list (``Paging``).
    ///
    /// - Throws: ``HTTPError`` 400 `invalid_limit` giving the range.
    public func pageLimit() throws(HTTPError) -> Int {
        guard let text = queryValue("limit") else { return Paging.defaultLimit }
        guard let limit = Int(text), (1...Paging.maximumLimit).contains(limit) else {
            throw HTTPError(
                status: 400,
                code: "invalid_limit",
                message: "limit must be a whole number from 1 to \(Paging.maximumLimit) (\(Paging.defaultLimit) "
                    + "when left out)",
                field: "limit"
            )
        }
        return limit
    }
}

/// A page of a list as every list answers it (``Paging``): the items under their name, and
/// `next_cursor`, `null` on the last page. (A store's page is a ``HeraldCore/Page``.)
public struct PageBody<Item: Encodable & Sendable>: Encodable, Sendable {
    /// The items' member: `"devices"`, `"live_activities"`, …
    public var name: String
    public var items: [Item]
    public var nextCursor: String?

    public init(_ name: String, _ items: [Item], nextCursor: String?) {
        self.name = name
        self.items = items
        self.nextCursor = nextCursor
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: JSONMemberKey.self)
        try container.encode(items, forKey: JSONMemberKey(name))
        try container.encode(nextCursor, forKey: JSONMemberKey("next_cursor"))
    }
}

extension PageBody where Item == JSONValue {
    /// The page as the one grammar's value, for items built as values: written with no `Encoder`
    /// between.
    public var json: JSONValue {
        .object([name: .array(items), "next_cursor": JSONValue(nextCursor)])
    }
}
