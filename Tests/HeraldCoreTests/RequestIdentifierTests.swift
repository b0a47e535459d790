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

    @Test("UUID text reads as Foundation's UUID(uuidString:) reads it, either case, and nothing else")
    func parsesLikeFoundation() {
        for _ in 0..<1000 {
            let uuid = UUID()
            #expect(RequestIdentifier.uuid(uuid.uuidString) == uuid)
            #expect(RequestIdentifier.uuid(RequestIdentifier.lowercaseString(uuid)) == uuid)
            #expect(RequestIdentifier.uuid(uuid.uuidString.dropFirst(0)) == uuid)
        }
        let valid = "5f0c2b1e-9a3d-4c8e-8a51-2d4e6f70819A"
        var candidates = [
            "", valid, String(valid.dropLast()), valid + "0", "{\(valid)}", " \(valid)",
            valid.replacingOccurrences(of: "-", with: ""), valid.replacingOccurrences(of: "-", with: "_"),
            "5f0c2b1e9-a3d-4c8e-8a51-2d4e6f70819a", "5f0c2b1e-9a3d-4c8e-8a51-2d4e6f70819g",
            "5f0c2b1e-9a3d-4c8e-8a51-2d4e6f7081é", "5f0c2b1e-9a3d-4c8e-8a51-2d4e6f70819\u{0}",
            "+f0c2b1e-9a3d-4c8e-8a51-2d4e6f70819a", "5f0c2b1e-+a3d-4c8e-8a51-2d4e6f70819a",
        ]
        // Every byte in every position of a valid id.
        let bytes = Array(valid.utf8)
        for position in stride(from: 0, to: bytes.count, by: 5) {
            for byte in UInt8(0x20)...UInt8(0x7E) {
                var changed = bytes
                changed[position] = byte
                candidates.append(String(decoding: changed, as: UTF8.self))
            }
        }
        // Foundation reads each pair of digits with sscanf, which also takes a sign or spaces
        // there ("+f0c2b1e-…" reads as 0f0c2b1e-…); the strict form alone is a UUID here.
        func isStrict(_ text: String) -> Bool {
            let bytes = Array(text.utf8)
            return bytes.count == 36
                && bytes.indices.allSatisfy { index in
                    [8, 13, 18, 23].contains(index)
                        ? bytes[index] == UInt8(ascii: "-")
                        : (bytes[index] < 0x80 && Character(UnicodeScalar(bytes[index])).isHexDigit)
                }
        }
        for text in candidates {
            #expect(RequestIdentifier.uuid(text) == (isStrict(text) ? UUID(uuidString: text) : nil), "\(text)")
        }
        #expect(RequestIdentifier.uuid("+f0c2b1e-9a3d-4c8e-8a51-2d4e6f70819a") == nil)
    }
}
