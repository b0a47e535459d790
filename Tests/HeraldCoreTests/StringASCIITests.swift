import HeraldCore
import Testing

@Suite struct StringASCIITests {
    @Test(arguments: [
        ("Content-Encoding", "content-encoding", true),
        ("CONTENT-ENCODING", "Content-Encoding", true),
        ("aes128gcm", "AES128GCM", true),
        ("", "", true),
        ("TTL", "TTLs", false),
        ("TTL", "TTM", false),
        // Bytes that differ by 0x20 but are not letters stay different.
        ("[", "{", false),
        ("@", "`", false),
        ("1", "\u{11}", false),
        // Non-ASCII bytes compare exactly.
        ("Ä", "ä", false),
        ("é", "é", true),
    ])
    func equalsIgnoringASCIICase(left: String, right: String, equal: Bool) {
        #expect(left.equalsIgnoringASCIICase(right) == equal)
        #expect(right.equalsIgnoringASCIICase(left) == equal)
    }

    @Test func largeStringsCompareLikeLowercasedCopies() {
        let name = String(repeating: "X-Header-Name-", count: 40)
        #expect(name.equalsIgnoringASCIICase(name.lowercased()))
        #expect(!name.equalsIgnoringASCIICase(name.lowercased() + "x"))
        #expect(!name.equalsIgnoringASCIICase(String(name.dropLast()) + "."))
    }

    @Test func trimmingSpaces() {
        #expect(" normal\t".trimmingSpaces() == "normal")
        #expect("high".trimmingSpaces() == "high")
        #expect("".trimmingSpaces() == "")
    }

    @Test func utf8OffsetFindsTheFirstByteAsFirstIndexDoes() {
        let texts = ["", "?", "/a?b?c", "/no-query", "/é/ü?x=ß", String(repeating: "a", count: 300) + "?"]
        for text in texts {
            let expected = text.utf8.firstIndex(of: UInt8(ascii: "?")).map {
                text.utf8.distance(from: text.utf8.startIndex, to: $0)
            }
            #expect(text.utf8Offset(of: UInt8(ascii: "?")) == expected, "\(text)")
            #expect(text.utf8Contains(UInt8(ascii: "?")) == (expected != nil))
            // A substring counts from its own start.
            let tail = text.dropFirst(1)
            let tailExpected = tail.utf8.firstIndex(of: UInt8(ascii: "?")).map {
                tail.utf8.distance(from: tail.utf8.startIndex, to: $0)
            }
            #expect(tail.utf8Offset(of: UInt8(ascii: "?")) == tailExpected, "\(tail)")
        }
        #expect("aé".utf8Offset(of: 0xA9) == 2)
    }
}
