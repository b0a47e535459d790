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
}
