/// Server-rendered HTML, written as text with every value escaped where it is put in.
///
/// ```swift
/// var html = HTML()
/// html.open("table")
/// html.element("td", user.name)   // escaped
/// html.close("table")
/// ```
struct HTML: Sendable {
    private(set) var markup = ""

    init() {
        markup.reserveCapacity(16 * 1024)
    }

    /// `value` escaped for text and for quoted attribute values: `&`, `<`, `>`, `"` and `'`.
    static func escape(_ value: String) -> String {
        guard value.utf8.contains(where: { $0 == 0x26 || $0 == 0x3C || $0 == 0x3E || $0 == 0x22 || $0 == 0x27 })
        else { return value }
        var out = ""
        out.reserveCapacity(value.utf8.count + 16)
        for character in value.unicodeScalars {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.unicodeScalars.append(character)
            }
        }
        return out
    }

    /// Markup written as it is: only literals of the console's own, never a value.
    mutating func raw(_ literal: String) {
        markup += literal
    }

    /// Text, escaped.
    mutating func text(_ value: String) {
        markup += Self.escape(value)
    }

    /// `<name attributes>`; attribute values are escaped.
    mutating func open(_ name: String, _ attributes: KeyValuePairs<String, String> = [:]) {
        markup += "<" + name
        for (key, value) in attributes { markup += " \(key)=\"\(Self.escape(value))\"" }
        markup += ">"
    }

    mutating func close(_ name: String) {
        markup += "</\(name)>"
    }

    /// `<name attributes>text</name>`, the text escaped.
    mutating func element(_ name: String, _ value: String, _ attributes: KeyValuePairs<String, String> = [:]) {
        open(name, attributes)
        text(value)
        close(name)
    }

    /// A link, its text and target escaped.
    mutating func link(_ value: String, to href: String, _ attributes: KeyValuePairs<String, String> = [:]) {
        markup += "<a href=\"\(Self.escape(href))\""
        for (key, value) in attributes { markup += " \(key)=\"\(Self.escape(value))\"" }
        markup += ">" + Self.escape(value) + "</a>"
    }

    /// A table: the header row, then each row's cells as already-written markup (``cell(_:)``).
    mutating func table(_ headers: [String], rows: [[String]], empty: String, id: String? = nil) {
        if rows.isEmpty {
            element("p", empty, ["class": "empty"])
            return
        }
        if let id { open("table", ["id": id]) } else { open("table") }
        raw("<thead><tr>")
        for header in headers { element("th", header) }
        raw("</tr></thead><tbody>")
        for row in rows {
            raw("<tr>")
            for cell in row { raw("<td>" + cell + "</td>") }
            raw("</tr>")
        }
        raw("</tbody></table>")
    }

    /// A cell's markup for ``table(_:rows:empty:id:)``: `value` escaped, or a dash when empty.
    static func cell(_ value: String?) -> String {
        guard let value, !value.isEmpty else { return "<span class=\"none\">–</span>" }
        return escape(value)
    }

    /// A cell holding a link.
    static func linkCell(_ value: String, to href: String) -> String {
        "<a href=\"\(escape(href))\">\(escape(value))</a>"
    }

    /// A status shown as a badge whose colour its class gives (`status-dead`).
    static func badge(_ value: String) -> String {
        let slug = String(value.unicodeScalars.filter { ("a"..."z").contains($0) || $0 == "_" })
        return "<span class=\"badge status-\(slug)\">\(escape(value))</span>"
    }
}
