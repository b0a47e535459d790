/// The timers of one ``EventLoop``: a binary min-heap of deadlines plus the bodies by id.
///
/// Cancelling removes only the body; its heap entry is dropped lazily when it comes to the top.
/// Loop thread only (owned by the loop).
struct TimerHeap {
    private struct Entry {
        var deadline: UInt64
        var id: UInt64
    }

    private var heap: [Entry] = []
    private var bodies: [UInt64: () -> Void] = [:]
    private var nextID: UInt64 = 1

    /// The earliest deadline of a live timer, dropping cancelled entries on the way.
    var nextDeadline: UInt64? {
        mutating get {
            while let top = heap.first {
                if bodies[top.id] != nil { return top.deadline }
                popTop()
            }
            return nil
        }
    }

    mutating func schedule(at deadline: UInt64, _ body: @escaping () -> Void) -> TimerHandle {
        let id = nextID
        nextID &+= 1
        bodies[id] = body
        heap.append(Entry(deadline: deadline, id: id))
        siftUp(heap.count - 1)
        return TimerHandle(id: id)
    }

    mutating func cancel(_ handle: TimerHandle) {
        bodies[handle.id] = nil
        if bodies.isEmpty {
            heap.removeAll(keepingCapacity: true)
        }
    }

    /// Removes and returns the body of the earliest timer due at `now`, if any.
    mutating func popDue(now: UInt64) -> (() -> Void)? {
        while let top = heap.first, top.deadline <= now {
            popTop()
            if let body = bodies.removeValue(forKey: top.id) { return body }
        }
        return nil
    }

    private mutating func popTop() {
        let last = heap.removeLast()
        guard !heap.isEmpty else { return }
        heap[0] = last
        siftDown(0)
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].deadline < heap[parent].deadline else { return }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        let count = heap.count
        while true {
            let left = 2 * parent + 1
            guard left < count else { return }
            var smallest = left
            let right = left + 1
            if right < count, heap[right].deadline < heap[left].deadline { smallest = right }
            guard heap[smallest].deadline < heap[parent].deadline else { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
