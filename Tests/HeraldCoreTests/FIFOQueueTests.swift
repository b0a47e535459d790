import HeraldCore
import Testing

@Suite("FIFO queue")
struct FIFOQueueTests {
    @Test("elements come out in the order they went in, across compactions")
    func order() {
        var queue = FIFOQueue<Int>()
        #expect(queue.isEmpty)
        #expect(queue.popFirst() == nil)
        var taken: [Int] = []
        var next = 0
        // Interleaved appends and takes keep the queue long, so taken slots are dropped in bulk.
        for _ in 0..<5_000 {
            queue.append(next)
            queue.append(next + 1)
            next += 2
            if let first = queue.popFirst() { taken.append(first) }
        }
        while let first = queue.popFirst() { taken.append(first) }
        #expect(taken == Array(0..<10_000))
        #expect(queue.isEmpty)
    }

    @Test("a removed element is skipped; the rest keep their order")
    func removeFromTheMiddle() {
        var queue = FIFOQueue<String>()
        for name in ["a", "b", "c", "d"] { queue.append(name) }
        #expect(queue.remove(where: { $0 == "c" }) == "c")
        #expect(queue.remove(where: { $0 == "z" }) == nil)
        #expect(queue.popFirst() == "a")
        #expect(queue.remove(where: { $0 == "a" }) == nil)
        #expect(queue.removeAll() == ["b", "d"])
        #expect(queue.isEmpty)
        #expect(queue.popFirst() == nil)
    }
}
