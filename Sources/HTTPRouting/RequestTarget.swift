import HeraldCore

/// The parts of an HTTP request target (`/a%20b/c?x=1&y=2`), and the percent-decoding the
/// module uses for paths, path parameters and query strings.
package struct RequestTarget: Sendable {
    /// The path as received, before decoding.
    package var rawPath: String
    /// The query string as received (no `?`), or `nil` when the target had none.
    package var rawQuery: String?

    /// Splits `target` at the first `?`. Absolute-form targets (`http://host/path`) keep only
    /// their path, as RFC 9112 section 3.2.2 asks of a server.
    package init(_ target: String) {
        var target = Substring(target)
        // An absolute-form target (`http://host/path`) never starts with `/`, the usual form.
        let absolute = target.utf8.first != UInt8(ascii: "/")
        for scheme in ["http://", "https://"] where absolute && target.lowercased().hasPrefix(scheme) {
            let afterScheme = target.dropFirst(scheme.count)
            let pathStart = afterScheme.firstIndex { $0 == "/" || $0 == "?" } ?? afterScheme.endIndex
            target = afterScheme[pathStart...]
            if target.first != "/" { target = "/" + target }
            break
        }
        // `?` is ASCII: its UTF-8 index is a character boundary.
        if let offset = target.utf8Offset(of: UInt8(ascii: "?")) {
            let question = target.utf8.index(target.utf8.startIndex, offsetBy: offset)
            rawPath = String(target[..<question])
            rawQuery = String(target[target.index(after: question)...])
        } else {
            rawPath = String(target)
            rawQuery = nil
        }
    }

    /// The query's `name=value` pairs in order, decoded (`+` is a space); repeated names kept,
    /// empty pairs skipped. A pair that does not decode keeps its raw text.
    package var queryItems: [(name: String, value: String)] {
        guard let rawQuery, !rawQuery.isEmpty else { return [] }
        return rawQuery.split(separator: "&", omittingEmptySubsequences: true).map { pair in
            let name: Substring
            let value: Substring
            if let equals = pair.firstIndex(of: "=") {
                name = pair[..<equals]
                value = pair[pair.index(after: equals)...]
            } else {
                name = pair
                value = ""
            }
            return (
                name: Self.percentDecode(name, plusAsSpace: true) ?? String(name),
                value: Self.percentDecode(value, plusAsSpace: true) ?? String(value)
            )
        }
    }

    /// `text` with `%XX` escapes replaced by their bytes, read as UTF-8; `nil` when an escape is
    /// malformed or the bytes are not valid UTF-8.
    package static func percentDecode(_ text: some StringProtocol, plusAsSpace: Bool = false) -> String? {
        let utf8 = text.utf8
        guard text.utf8Contains(UInt8(ascii: "%")) || (plusAsSpace && text.utf8Contains(UInt8(ascii: "+"))) else {
            return String(text)
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count)
        var index = utf8.startIndex
        while index != utf8.endIndex {
            let byte = utf8[index]
            if byte == UInt8(ascii: "%") {
                let first = utf8.index(after: index)
                guard first != utf8.endIndex else { return nil }
                let second = utf8.index(after: first)
                guard second != utf8.endIndex, let high = hexValue(utf8[first]), let low = hexValue(utf8[second])
                else { return nil }
                bytes.append(high << 4 | low)
                index = utf8.index(after: second)
            } else {
                bytes.append(plusAsSpace && byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
                index = utf8.index(after: index)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
