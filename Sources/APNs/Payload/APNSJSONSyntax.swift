/// A strict RFC 8259 syntax check that builds nothing: for payloads that are only passed on (the
/// send path's validation, the simulator). It checks the grammar and limits nesting; it does not
/// decode strings. ``APNSJSONValue/init(parsing:)`` reads the same grammar, builds the values, and
/// also refuses invalid UTF-8, lone surrogates and numbers beyond a double.
///
/// Public for the APNs simulator, which checks every payload without decoding it.
public enum APNSJSONSyntax {
    /// The deepest nesting of objects and arrays accepted.
    public static let maxDepth = 64

    /// Whether `bytes` is one RFC 8259 JSON value (any type), surrounded only by whitespace, nested
    /// at most ``maxDepth`` deep.
    public static func isValid(_ bytes: [UInt8]) -> Bool {
        var scanner = Scanner(bytes: bytes)
        guard scanner.value(depth: 0) else { return false }
        scanner.skipWhitespace()
        return scanner.index == bytes.count
    }

    private struct Scanner {
        let bytes: [UInt8]
        var index = 0

        init(bytes: [UInt8]) {
            self.bytes = bytes
        }

        var current: UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func skipWhitespace() {
            while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
        }

        mutating func consume(_ byte: UInt8) -> Bool {
            guard current == byte else { return false }
            index += 1
            return true
        }

        mutating func value(depth: Int) -> Bool {
            skipWhitespace()
            guard let byte = current else { return false }
            switch byte {
            case UInt8(ascii: "{"): return depth < APNSJSONSyntax.maxDepth && object(depth: depth + 1)
            case UInt8(ascii: "["): return depth < APNSJSONSyntax.maxDepth && array(depth: depth + 1)
            case UInt8(ascii: "\""): return string()
            case UInt8(ascii: "t"): return literal("true")
            case UInt8(ascii: "f"): return literal("false")
            case UInt8(ascii: "n"): return literal("null")
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return number()
            default: return false
            }
        }

        mutating func object(depth: Int) -> Bool {
            index += 1
            skipWhitespace()
            if consume(UInt8(ascii: "}")) { return true }
            while true {
                skipWhitespace()
                guard current == UInt8(ascii: "\""), string() else { return false }
                skipWhitespace()
                guard consume(UInt8(ascii: ":")), value(depth: depth) else { return false }
                skipWhitespace()
                if consume(UInt8(ascii: ",")) { continue }
                return consume(UInt8(ascii: "}"))
            }
        }

        mutating func array(depth: Int) -> Bool {
            index += 1
            skipWhitespace()
            if consume(UInt8(ascii: "]")) { return true }
            while true {
                guard value(depth: depth) else { return false }
                skipWhitespace()
                if consume(UInt8(ascii: ",")) { continue }
                return consume(UInt8(ascii: "]"))
            }
        }

        mutating func string() -> Bool {
            index += 1
            while let byte = current {
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    return true
                case UInt8(ascii: "\\"):
                    guard let escaped = current else { return false }
                    index += 1
                    switch escaped {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
                        UInt8(ascii: "f"),
                        UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                        continue
                    case UInt8(ascii: "u"):
                        for _ in 0..<4 {
                            guard let hex = current, hex.isHexDigit else { return false }
                            index += 1
                        }
                    default:
                        return false
                    }
                case 0..<0x20:
                    return false
                default:
                    continue
                }
            }
            return false
        }

        mutating func number() -> Bool {
            _ = consume(UInt8(ascii: "-"))
            if consume(UInt8(ascii: "0")) {
                // no further integer digits after a leading zero
            } else {
                guard digits() else { return false }
            }
            if consume(UInt8(ascii: ".")) {
                guard digits() else { return false }
            }
            if consume(UInt8(ascii: "e")) || consume(UInt8(ascii: "E")) {
                if !consume(UInt8(ascii: "+")) { _ = consume(UInt8(ascii: "-")) }
                guard digits() else { return false }
            }
            return true
        }

        mutating func digits() -> Bool {
            let start = index
            while let byte = current, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) { index += 1 }
            return index > start
        }

        mutating func literal(_ word: String) -> Bool {
            let expected = Array(word.utf8)
            guard index + expected.count <= bytes.count, bytes[index..<index + expected.count].elementsEqual(expected)
            else { return false }
            index += expected.count
            return true
        }
    }
}

extension UInt8 {
    fileprivate var isHexDigit: Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(self)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(self)
    }
}
