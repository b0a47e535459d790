import Foundation

extension String {
    /// The string without leading and trailing whitespace, as Foundation's
    /// `trimmingCharacters(in: .whitespaces)` would trim it. Header values rarely have any, so
    /// that common case costs two byte comparisons instead of a Foundation call.
    public func trimmingSpaces() -> String {
        let utf8 = self.utf8
        guard let first = utf8.first, let last = utf8.last else { return self }
        func plain(_ byte: UInt8) -> Bool { byte > 0x20 && byte < 0x80 }
        if plain(first) && plain(last) { return self }
        return trimmingCharacters(in: .whitespaces)
    }

    /// Whether `self` equals `other` when ASCII letters are compared without regard to case, as
    /// HTTP field names and many field values are (RFC 9110, section 5.1). Every other byte must
    /// match exactly; nothing is allocated.
    public func equalsIgnoringASCIICase(_ other: String) -> Bool {
        // Most comparisons (a header name against the one looked for) fail on length, which a
        // native string knows without looking at its bytes.
        guard utf8.count == other.utf8.count else { return false }
        let fast = utf8.withContiguousStorageIfAvailable { left in
            other.utf8.withContiguousStorageIfAvailable { right in Self.equalIgnoringASCIICase(left, right) }
        }
        if let fast, let result = fast { return result }
        return Self.equalIgnoringASCIICase(Array(utf8), Array(other.utf8))
    }

    private static func equalIgnoringASCIICase<C: RandomAccessCollection<UInt8>>(_ left: C, _ right: C) -> Bool
    where C.Index == Int {
        guard left.count == right.count else { return false }
        var index = 0
        while index < left.count {
            let a = left[left.startIndex + index]
            let b = right[right.startIndex + index]
            if a != b {
                // Equal once lowercased, and a letter: other bytes differing by 0x20 do not match.
                let lower = a | 0x20
                guard lower == b | 0x20, lower >= UInt8(ascii: "a"), lower <= UInt8(ascii: "z") else { return false }
            }
            index += 1
        }
        return true
    }
}

extension StringProtocol {
    /// The offset of the first UTF-8 byte equal to `byte`, or `nil`. Native strings are scanned in
    /// place with `memchr` rather than byte by byte through an iterator (`utf8.firstIndex(of:)`):
    /// the request path calls it.
    public func utf8Offset(of byte: UInt8) -> Int? {
        let scanned = utf8.withContiguousStorageIfAvailable { bytes -> Int? in
            guard let base = bytes.baseAddress, let hit = memchr(base, Int32(byte), bytes.count) else { return nil }
            return UnsafeRawPointer(base).distance(to: UnsafeRawPointer(hit))
        }
        if let scanned { return scanned }
        var offset = 0
        for candidate in utf8 {
            if candidate == byte { return offset }
            offset += 1
        }
        return nil
    }

    /// Whether the UTF-8 bytes include `byte` (see ``utf8Offset(of:)``).
    public func utf8Contains(_ byte: UInt8) -> Bool {
        utf8Offset(of: byte) != nil
    }
}
