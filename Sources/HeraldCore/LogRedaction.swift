/// What log lines show of text a client chose (a request path), so that a log never holds a
/// whole device token, API key or JWT, whatever the route.
public enum LogRedaction {
    /// `text` with every run of 64 or more hex digits (a device token, a generated API key)
    /// shortened to its first 8 and `…`, and every JWT-shaped word (base64url from `eyJ`, with a
    /// dot) shortened to `eyJ…`. Returns `text` itself when there is nothing to shorten.
    public static func path(_ text: String) -> String {
        guard mayNeedRedaction(text.utf8) else { return text }
        let bytes = Array(text.utf8)
        var output: [UInt8] = []
        var copied = 0
        var index = 0
        while index < bytes.count {
            guard isWordByte(bytes[index]) else {
                index += 1
                continue
            }
            // A word: base64url letters and dots, between any other bytes.
            var end = index
            while end < bytes.count, isWordByte(bytes[end]) { end += 1 }
            let word = bytes[index..<end]
            if word.starts(with: "eyJ".utf8), word.contains(UInt8(ascii: ".")) {
                output.append(contentsOf: bytes[copied..<index])
                output.append(contentsOf: "eyJ…".utf8)
                copied = end
            } else {
                var run = index
                while run < end {
                    guard isHexDigit(bytes[run]) else {
                        run += 1
                        continue
                    }
                    var runEnd = run
                    while runEnd < end, isHexDigit(bytes[runEnd]) { runEnd += 1 }
                    if runEnd - run >= 64 {
                        output.append(contentsOf: bytes[copied..<run + 8])
                        output.append(contentsOf: "…".utf8)
                        copied = runEnd
                    }
                    run = runEnd
                }
            }
            index = end
        }
        guard copied > 0 else { return text }
        output.append(contentsOf: bytes[copied...])
        return String(decoding: output, as: UTF8.self)
    }

    /// Whether `bytes` hold 64 hex digits in a row or an `eyJ`, without allocating: the access
    /// log asks for every request.
    private static func mayNeedRedaction(_ bytes: String.UTF8View) -> Bool {
        var hexRun = 0
        var previous: (UInt8, UInt8) = (0, 0)
        for byte in bytes {
            hexRun = isHexDigit(byte) ? hexRun + 1 : 0
            if hexRun >= 64 { return true }
            if byte == UInt8(ascii: "J"), previous == (UInt8(ascii: "e"), UInt8(ascii: "y")) { return true }
            previous = (previous.1, byte)
        }
        return false
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"),
            UInt8(ascii: "A")...UInt8(ascii: "F"):
            true
        default:
            false
        }
    }

    /// base64url's alphabet and the dot.
    private static func isWordByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."):
            true
        default:
            false
        }
    }
}
