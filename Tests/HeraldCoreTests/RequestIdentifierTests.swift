import Foundation
import HeraldCore
import Testing

@Suite struct RequestIdentifierTests {
    @Test func freshIDsAreDistinctLowercaseVersion4UUIDs() throws {
        let ids = (0..<1000).map { _ in RequestIdentifier.next() }
        #expect(Set(ids).count == ids.count)
        for id in ids {
            #expect(id.utf8.count == 36)
            #expect(id == id.lowercased())
            let uuid = try #require(UUID(uuidString: id))
            #expect(uuid.uuid.6 >> 4 == 4)
            #expect(uuid.uuid.8 >> 6 == 0b10)
        }
    }

    @Test("ids of one process differ in their first eight characters, so a short prefix names one")
    func shortPrefixesAreDistinct() {
        let ids = (0..<100).map { _ in RequestIdentifier.next() }
        #expect(Set(ids.map { $0.prefix(8) }).count == ids.count)
    }
}
