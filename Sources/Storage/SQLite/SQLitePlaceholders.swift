/// Herald's `$n` placeholders in the spelling SQLite numbers directly.
///
/// To SQLite, `$1` is a named parameter: it finds each name by a linear search of the names seen
/// so far in the statement, so preparing a statement of n placeholders takes time quadratic in n
/// (a 2,000-placeholder insert spent most of its prepare in `strncmp`), and a name's index is the
/// order of its first appearance. `?NNN` is numbered: its index is NNN, with no search when the
/// numbers first appear in ascending order, as they do in a multi-row `VALUES` list.
///
/// ``numbered(_:)`` turns `$n` into `?n` outside string literals, quoted identifiers and comments,
/// following SQLite's own tokenizer, so one SQL text means the same to both dialects. The two
/// spellings have the same length, so nothing else in the text moves.
enum SQLitePlaceholders {
    /// `sql` with every `$` that starts a numbered placeholder replaced by `?`.
    static func numbered(_ sql: String) -> String {
        var bytes = Array(sql.utf8)
        var changed = false
        var index = 0
        let end = bytes.count
        while index < end {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "'"), UInt8(ascii: "\""), UInt8(ascii: "`"):
                // A literal or quoted identifier; a doubled quote inside it stands for itself.
                index += 1
                while index < end {
                    if bytes[index] == byte {
                        if index + 1 < end, bytes[index + 1] == byte {
                            index += 2
                            continue
                        }
                        break
                    }
                    index += 1
                }
                index += 1
            case UInt8(ascii: "["):
                // SQLite also quotes identifiers in brackets, with no escape inside.
                while index < end, bytes[index] != UInt8(ascii: "]") { index += 1 }
                index += 1
            case UInt8(ascii: "-") where index + 1 < end && bytes[index + 1] == UInt8(ascii: "-"):
                while index < end, bytes[index] != UInt8(ascii: "\n") { index += 1 }
            case UInt8(ascii: "/") where index + 1 < end && bytes[index + 1] == UInt8(ascii: "*"):
                index += 2
                while index < end,
                    !(bytes[index] == UInt8(ascii: "*") && index + 1 < end && bytes[index + 1] == UInt8(ascii: "/"))
                {
                    index += 1
                }
                index += 2
            case UInt8(ascii: "$")
            where index + 1 < end && isDigit(bytes[index + 1]) && (index == 0 || !isIdentifierByte(bytes[index - 1])):
                bytes[index] = UInt8(ascii: "?")
                changed = true
                index += 1
            default:
                index += 1
            }
        }
        return changed ? String(decoding: bytes, as: UTF8.self) : sql
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    /// Bytes that continue an identifier in SQLite (`a$1` is one identifier, not `a` and `$1`).
    private static func isIdentifierByte(_ byte: UInt8) -> Bool {
        isDigit(byte) || (byte | 0x20 >= UInt8(ascii: "a") && byte | 0x20 <= UInt8(ascii: "z"))
            || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "$") || byte >= 0x80
    }
}
