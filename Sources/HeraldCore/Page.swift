/// One page of a keyset-paged list and where the next starts: what a store answers, written
/// to the wire as HTTPRouting's `PageBody`.
public struct Page<Element: Sendable>: Sendable {
    public var items: [Element]
    /// Pass as `cursor` to read on; `nil` on the last page.
    public var nextCursor: String?

    public init(items: [Element], nextCursor: String?) {
        self.items = items
        self.nextCursor = nextCursor
    }
}
