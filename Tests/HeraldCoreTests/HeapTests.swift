import HeraldCore
import Testing

@Suite struct HeapTests {
    @Test("elements come out smallest first, whatever order they went in")
    func sortedOrder() {
        var generator = SystemRandomNumberGenerator()
        let values = (0..<500).map { _ in Int.random(in: -1000...1000, using: &generator) }
        var heap = Heap<Int>()
        for value in values { heap.insert(value) }
        #expect(heap.count == values.count)
        #expect(heap.min == values.min())
        var out: [Int] = []
        while let value = heap.popMin() { out.append(value) }
        #expect(out == values.sorted())
        #expect(heap.isEmpty)
        #expect(heap.popMin() == nil)
        #expect(heap.min == nil)
    }

    @Test("popMin(if:) takes the smallest only when the predicate accepts it")
    func conditionalPop() {
        var heap = Heap<Int>()
        for value in [30, 10, 20] { heap.insert(value) }
        #expect(heap.popMin(if: { $0 < 10 }) == nil)
        #expect(heap.count == 3)
        #expect(heap.popMin(if: { $0 <= 10 }) == 10)
        #expect(heap.popMin(if: { $0 <= 25 }) == 20)
        #expect(heap.popMin(if: { $0 <= 25 }) == nil)
        #expect(heap.min == 30)
    }

    @Test("removeAll(where:) drops the matching elements and keeps the rest in order")
    func removeWhere() {
        var heap = Heap<Int>()
        for value in (0..<100).reversed() { heap.insert(value) }
        heap.removeAll(where: { $0 % 3 == 0 })
        var out: [Int] = []
        while let value = heap.popMin() { out.append(value) }
        #expect(out == (0..<100).filter { $0 % 3 != 0 })
    }

    @Test("interleaved inserts and pops always return the current minimum")
    func interleaved() {
        var heap = Heap<Int>()
        var reference: [Int] = []
        var generator = SystemRandomNumberGenerator()
        for step in 0..<2000 {
            if step % 3 == 2 {
                let expected = reference.min()
                if let expected, let index = reference.firstIndex(of: expected) { reference.remove(at: index) }
                #expect(heap.popMin() == expected)
            } else {
                let value = Int.random(in: 0...50, using: &generator)
                heap.insert(value)
                reference.append(value)
            }
        }
        #expect(heap.count == reference.count)
        heap.removeAll()
        #expect(heap.isEmpty)
    }

    @Test("a tie-breaker keeps equal keys in insertion order")
    func tieBreaker() {
        struct Entry: Comparable {
            var key: Int
            var sequence: Int
            static func < (lhs: Entry, rhs: Entry) -> Bool {
                (lhs.key, lhs.sequence) < (rhs.key, rhs.sequence)
            }
        }
        var heap = Heap<Entry>()
        for sequence in 0..<20 { heap.insert(Entry(key: sequence % 2, sequence: sequence)) }
        var out: [Int] = []
        while let entry = heap.popMin() { out.append(entry.sequence) }
        #expect(out == Array(stride(from: 0, to: 20, by: 2)) + Array(stride(from: 1, to: 20, by: 2)))
    }
}
