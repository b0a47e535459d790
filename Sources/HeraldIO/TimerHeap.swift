import HeraldCore

/// The timers of one ``EventLoop``: a ``HeraldCore/Heap`` of deadlines plus the bodies by id.
///
/// Cancelling removes only the body; its heap entry is dropped lazily when it comes to the top.
/// Timers due at the same time run in the order they were scheduled. Loop thread only (owned by
/// the loop).
struct TimerHeap {
    private struct Entry: Comparable {
        var deadline: UInt64
        var id: UInt64

        static func < (lhs: Entry, rhs: Entry) -> Bool {
            lhs.deadline < rhs.deadline || (lhs.deadline == rhs.deadline && lhs.id < rhs.id)
        }
    }

    private var heap = Heap<Entry>()
    private var bodies: [UInt64: () -> Void] = [:]
    private var nextID: UInt64 = 1

    /// The earliest deadline of a live timer, dropping cancelled entries on the way.
    var nextDeadline: UInt64? {
        mutating get {
            while let top = heap.min {
                if bodies[top.id] != nil { return top.deadline }
                heap.popMin()
            }
            return nil
        }
    }

    mutating func schedule(at deadline: UInt64, _ body: @escaping () -> Void) -> TimerHandle {
        let id = nextID
        nextID &+= 1
        bodies[id] = body
        heap.insert(Entry(deadline: deadline, id: id))
        return TimerHandle(id: id)
    }

    mutating func cancel(_ handle: TimerHandle) {
        bodies[handle.id] = nil
        if bodies.isEmpty {
            heap.removeAll(keepingCapacity: true)
        }
    }

    /// Drops every timer, fired or not (the loop is stopping).
    mutating func removeAll() {
        heap.removeAll(keepingCapacity: false)
        bodies = [:]
    }

    /// Removes and returns the body of the earliest timer due at `now`, if any.
    mutating func popDue(now: UInt64) -> (() -> Void)? {
        while let top = heap.popMin(if: { $0.deadline <= now }) {
            if let body = bodies.removeValue(forKey: top.id) { return body }
        }
        return nil
    }
}
