/// A fuzz input read as a small HTTP-like message: a first line, `name: value` lines up to an
/// empty line, then the body. This only splits test input; the code under test parses the parts.
struct FuzzInput {
    var firstLine: String
    var headers: [(name: String, value: String)]
    var body: [UInt8]

    init(_ data: [UInt8]) {
        var lines: [[UInt8]] = []
        var start = 0
        var bodyStart = data.count
        var index = 0
        while index < data.count {
            if data[index] == UInt8(ascii: "\n") {
                var line = Array(data[start..<index])
                if line.last == UInt8(ascii: "\r") { line.removeLast() }
                if line.isEmpty && !lines.isEmpty {
                    bodyStart = index + 1
                    break
                }
                lines.append(line)
                start = index + 1
            }
            index += 1
        }
        if index >= data.count, start < data.count, bodyStart == data.count {
            lines.append(Array(data[start...]))
        }
        firstLine = lines.first.map { String(decoding: $0, as: UTF8.self) } ?? ""
        headers = lines.dropFirst().map { line in
            let text = String(decoding: line, as: UTF8.self)
            guard let colon = text.firstIndex(of: ":") else { return (text, "") }
            let value = text[text.index(after: colon)...].drop { $0 == " " }
            return (String(text[..<colon]), String(value))
        }
        body = bodyStart < data.count ? Array(data[bodyStart...]) : []
    }

    /// The first line's two words: method and target (or path).
    var methodAndTarget: (method: String, target: String) {
        let words = firstLine.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        return (words.first.map(String.init) ?? "GET", words.count > 1 ? String(words[1]) : "/")
    }
}
