import Foundation
import Testing

@testable import HeraldCore

@Suite struct ResourceIdentifierTests {
    @Test("the layout of RFC 9562's UUIDv7 example (appendix A.6)")
    func rfcExample() {
        let id = ResourceIdentifier.make(milliseconds: 0x017F_22E2_79B0, randomA: 0xCC3, randomB: 0x18C4_DC0C_0C07_398F)
        #expect(RequestIdentifier.lowercaseString(id) == "017f22e2-79b0-7cc3-98c4-dc0c0c07398f")
        #expect(ResourceIdentifier.randomBits(of: id) == (0xCC3, 0x18C4_DC0C_0C07_398F))
    }

    @Test("version 7, variant 0b10, the time in milliseconds in front")
    func versionVariantAndTime() {
        let date = Date(timeIntervalSince1970: 1_733_390_000.123)
        let id = ResourceIdentifier.next(at: date)
        #expect(id.uuid.6 >> 4 == 7)
        #expect(id.uuid.8 >> 6 == 0b10)
        let text = RequestIdentifier.lowercaseString(id)
        let milliseconds = UInt64(text.prefix(8) + text.dropFirst(9).prefix(4), radix: 16)
        #expect(milliseconds == 1_733_390_000_123)
    }

    @Test("1,000 ids share no random bits with each other or with request ids")
    func randomBitsAreDrawnPerID() {
        let ids = (0..<1000).map { _ in ResourceIdentifier.next() }
        let random = ids.map { ResourceIdentifier.randomBits(of: $0) }
        #expect(Set(random.map(\.b)).count == ids.count)
        // Every one of the 74 random bit positions takes both values: no bit is fixed per process.
        let orA = random.reduce(UInt16(0)) { $0 | $1.a }
        let andA = random.reduce(UInt16(0x0FFF)) { $0 & $1.a }
        let orB = random.reduce(UInt64(0)) { $0 | $1.b }
        let andB = random.reduce(UInt64(0x3FFF_FFFF_FFFF_FFFF)) { $0 & $1.b }
        #expect(orA == 0x0FFF && andA == 0)
        #expect(orB == 0x3FFF_FFFF_FFFF_FFFF && andB == 0)
        // The last 16 hex digits (the old ids' process-wide suffix) are never shared.
        let requestTails = Set((0..<1000).map { _ in RequestIdentifier.next().suffix(16) })
        let tails = ids.map { RequestIdentifier.lowercaseString($0).suffix(16) }
        #expect(Set(tails).count == ids.count)
        #expect(requestTails.isDisjoint(with: tails))
    }
}
