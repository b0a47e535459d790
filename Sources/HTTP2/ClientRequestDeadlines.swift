import HeraldCore

/// The request deadlines of a ``ClientSessionState``. Deadlines from the connection's default
/// timeout come due in the order requests were submitted, so they wait in a first-in first-out
/// array; a request's own timeout can be earlier or later than the ones before it, so those wait
/// in a ``HeraldCore/Heap``.
///
/// A request that ends leaves its entry behind (the caller counts it with ``forget()``): entries
/// are checked with `isLive` when they come to the front, and dropped in bulk once most are
/// stale, so neither side grows with requests that ended long ago.
struct ClientRequestDeadlines {
    /// A request's deadline; stale once its slot's generation moved on or its deadline was cleared.
    struct Entry: Comparable {
        var time: UInt64
        var slot: Int32
        var generation: UInt32

        static func < (lhs: Entry, rhs: Entry) -> Bool { lhs.time < rhs.time }
    }

    /// Default-timeout deadlines in submission order, from `head` on.
    private var inOrder: [Entry] = []
    private var head = 0
    private var ownTimeouts = Heap<Entry>()
    /// Entries (on either side) whose request has ended.
    private var stale = 0

    /// The number of entries, stale ones included.
    var count: Int { inOrder.count - head + ownTimeouts.count }

    /// Adds a deadline: `inSubmissionOrder` for one from the connection's default timeout.
    mutating func insert(_ entry: Entry, inSubmissionOrder: Bool) {
        if inSubmissionOrder {
            inOrder.append(entry)
        } else {
            ownTimeouts.insert(entry)
        }
    }

    /// A request with an entry ended: its entry is stale from now on.
    /// - Returns: true when stale entries are most of them and many: call ``dropStale(isLive:)``.
    mutating func forget() -> Bool {
        stale += 1
        return stale >= 1024 && stale * 2 >= count
    }

    /// The earliest live deadline, dropping stale entries that come first.
    mutating func earliest(isLive: (Entry) -> Bool) -> UInt64? {
        let (first, own) = liveFronts(isLive: isLive)
        switch (first, own) {
        case (let first?, let own?): return min(first.time, own.time)
        case (let first?, nil): return first.time
        case (nil, let own?): return own.time
        case (nil, nil): return nil
        }
    }

    /// Takes out the earliest live entry if it is due at `now`, dropping stale ones on the way.
    mutating func popDue(now: UInt64, isLive: (Entry) -> Bool) -> Entry? {
        let (first, own) = liveFronts(isLive: isLive)
        if let first, first.time <= now, own.map({ first.time <= $0.time }) ?? true {
            popInOrder(live: true)
            return first
        }
        if let own, own.time <= now {
            ownTimeouts.popMin()
            return own
        }
        return nil
    }

    /// Drops every stale entry, in O(n).
    mutating func dropStale(isLive: (Entry) -> Bool) {
        inOrder.removeSubrange(0..<head)
        head = 0
        inOrder.removeAll(where: { !isLive($0) })
        ownTimeouts.removeAll(where: { !isLive($0) })
        stale = 0
    }

    mutating func removeAll() {
        inOrder = []
        head = 0
        ownTimeouts.removeAll()
        stale = 0
    }

    /// The first live entry of each side, after dropping the stale ones before them.
    private mutating func liveFronts(isLive: (Entry) -> Bool) -> (inOrder: Entry?, own: Entry?) {
        while head < inOrder.count, !isLive(inOrder[head]) { popInOrder() }
        while let top = ownTimeouts.min, !isLive(top) {
            ownTimeouts.popMin()
            stale -= 1
        }
        return (head < inOrder.count ? inOrder[head] : nil, ownTimeouts.min)
    }

    private mutating func popInOrder(live: Bool = false) {
        if !live { stale -= 1 }
        head += 1
        if head == inOrder.count {
            inOrder.removeAll(keepingCapacity: inOrder.count <= 4096)
            head = 0
        } else if head >= 1024, head * 2 >= inOrder.count {
            inOrder.removeSubrange(0..<head)
            head = 0
        }
    }
}
