import HeraldCore
import Testing

@Suite struct CopyOnWriteBoxTests {
    private struct Fields: Sendable, Equatable {
        var name: String
        var values: [Int]
    }

    @Test("copies share one box until one changes; the change stays in that copy")
    func copyOnWrite() {
        var original = CopyOnWriteBox(Fields(name: "a", values: [1]))
        var copy = original
        #expect(copy.sharesStorage(with: original))
        copy.fields.values.append(2)
        #expect(!copy.sharesStorage(with: original))
        #expect(original.fields == Fields(name: "a", values: [1]))
        #expect(copy.fields == Fields(name: "a", values: [1, 2]))
        let before = original
        original.fields.name = "b"
        #expect(before.fields.name == "a" && original.fields.name == "b")
    }

    @Test("a box no other copy shares is changed in place")
    func uniqueBoxChangesInPlace() {
        var box = CopyOnWriteBox(Fields(name: "a", values: []))
        for value in 0..<100 { box.fields.values.append(value) }
        let alias = box
        #expect(alias.sharesStorage(with: box))
        #expect(box.fields.values.count == 100)
    }
}
