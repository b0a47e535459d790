/// A binary min-heap on an array: the smallest element (by `<`) is read in O(1), inserted and
/// taken out in O(log n).
///
/// Elements that compare equal come out in no particular order; give them a tie-breaker (an
/// insertion counter) when order matters. Not thread-safe: a value type like `Array`.
public struct Heap<Element: Comparable> {
    private var items: [Element] = []

    public init() {}

    /// The number of elements.
    public var count: Int { items.count }

    public var isEmpty: Bool { items.isEmpty }

    /// The smallest element, or nil when the heap is empty.
    public var min: Element? { items.first }

    public mutating func insert(_ element: Element) {
        items.append(element)
        siftUp(items.count - 1)
    }

    /// Takes out and returns the smallest element, or nil when the heap is empty.
    @discardableResult
    public mutating func popMin() -> Element? {
        guard let last = items.popLast() else { return nil }
        guard !items.isEmpty else { return last }
        let first = items[0]
        items[0] = last
        siftDown(0)
        return first
    }

    /// Takes out the smallest element when `predicate` accepts it.
    public mutating func popMin(if predicate: (Element) -> Bool) -> Element? {
        guard let first = items.first, predicate(first) else { return nil }
        return popMin()
    }

    /// Removes every element, keeping the storage when `keepingCapacity`.
    public mutating func removeAll(keepingCapacity: Bool = false) {
        items.removeAll(keepingCapacity: keepingCapacity)
    }

    /// Removes the elements `shouldBeRemoved` accepts and restores the heap order, in O(n).
    public mutating func removeAll(where shouldBeRemoved: (Element) -> Bool) {
        items.removeAll(where: shouldBeRemoved)
        var index = items.count / 2
        while index > 0 {
            index -= 1
            siftDown(index)
        }
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        let element = items[child]
        while child > 0 {
            let parent = (child - 1) / 2
            guard element < items[parent] else { break }
            items[child] = items[parent]
            child = parent
        }
        items[child] = element
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        let count = items.count
        let element = items[parent]
        while true {
            let left = 2 * parent + 1
            guard left < count else { break }
            var smallest = left
            let right = left + 1
            if right < count, items[right] < items[left] { smallest = right }
            guard items[smallest] < element else { break }
            items[parent] = items[smallest]
            parent = smallest
        }
        items[parent] = element
    }
}

extension Heap: Sendable where Element: Sendable {}
