/// PostgreSQL's text form of a one-dimensional array (`{"a","b",NULL}`), to bind a whole column of
/// values as one parameter: `unnest($2::text[], $3::bigint[])` turns them back into rows, so a
/// statement inserting any number of rows has a fixed, small number of parameters.
///
/// Every element is quoted, with `"` and `\` escaped by a backslash, as PostgreSQL's array input
/// reads them; `nil` is the unquoted `NULL`.
public enum PostgresArrayLiteral {
    public static func text(_ values: some Sequence<String?>) -> String {
        var literal = "{"
        var first = true
        for value in values {
            if !first { literal += "," }
            first = false
            guard let value else {
                literal += "NULL"
                continue
            }
            literal += "\""
            if value.utf8.contains(where: { $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
                for character in value.unicodeScalars {
                    if character == "\"" || character == "\\" { literal += "\\" }
                    literal.unicodeScalars.append(character)
                }
            } else {
                literal += value
            }
            literal += "\""
        }
        return literal + "}"
    }

    public static func integers(_ values: some Sequence<Int64?>) -> String {
        var literal = "{"
        var first = true
        for value in values {
            if !first { literal += "," }
            first = false
            literal += value.map { String($0) } ?? "NULL"
        }
        return literal + "}"
    }
}
