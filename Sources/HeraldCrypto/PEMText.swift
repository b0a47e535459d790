/// Tidies PEM text as people paste it before OpenSSL reads it.
enum PEMText {
    /// Trims whitespace around every line (indentation from YAML or `.env` files, `\r` from CRLF
    /// files) and drops blank lines. When the text has no line breaks but holds the two characters
    /// `\n`, as keys squeezed into one-line environment variables do, those become line breaks.
    static func normalized(_ text: String) -> String {
        var text = text
        if !text.contains(where: \.isNewline), text.contains("\\n") {
            text = text.replacing("\\n", with: "\n")
        }
        let lines = text.split(whereSeparator: \.isNewline)
            .map { $0.trimmingWhitespace() }
            .filter { !$0.isEmpty }
        return lines.joined(separator: "\n") + "\n"
    }
}

extension Substring {
    fileprivate func trimmingWhitespace() -> Substring {
        var result = self
        while let first = result.first, first.isWhitespace {
            result.removeFirst()
        }
        while let last = result.last, last.isWhitespace {
            result.removeLast()
        }
        return result
    }
}
