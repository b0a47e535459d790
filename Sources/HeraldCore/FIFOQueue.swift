/// A first-in first-out queue on an array: taking the first element moves nothing.
///
/// Taken slots are cleared (so their elements are released at once) and dropped in bulk once
/// they are half the array, so `popFirst()` is amortized O(1) however many elements wait.
/// ``remove(where:)`` clears a slot in the middle, which ``popFirst()`` then skips.
public struct FIFOQueue<Element> {
    private var items: [Element?] = []
    private var head = 0

    public init() {}

    /// No slot is left from the front on, not even a cleared one.
    public var isEmpty: Bool { head == items.count }

    public mutating func append(_ element: Element) {
        items.append(element)
    }

    /// The first element, or `nil` when none is left.
    public mutating func popFirst() -> Element? {
        while head < items.count {
            let element = items[head]
            items[head] = nil
            head += 1
            if head == items.count {
                items.removeAll(keepingCapacity: items.count <= 4096)
                head = 0
            } else if head >= 1024, head * 2 >= items.count {
                items.removeFirst(head)
                head = 0
            }
            if let element { return element }
        }
        return nil
    }

    /// Takes out the first element that `predicate` accepts (a linear search), or returns `nil`.
    public mutating func remove(where predicate: (Element) -> Bool) -> Element? {
        var index = head
        while index < items.count {
            if let element = items[index], predicate(element) {
                items[index] = nil
                return element
            }
            index += 1
        }
        return nil
    }

    /// Every element left, first first; the queue is empty afterwards.
    public mutating func removeAll() -> [Element] {
        let remaining = items[head...].compactMap { $0 }
        items = []
        head = 0
        return remaining
    }
}
