import HeraldCore

/// Writes one JSON object field by field, for control API answers that embed payloads verbatim.
struct JSONObjectWriter {
    private var text = "{"
    private var empty = true

    /// A field whose value is already JSON text.
    mutating func raw(_ key: String, _ json: String) {
        if !empty { text += "," }
        empty = false
        text += JSONText.quote(key)
        text += ":"
        text += json
    }

    mutating func string(_ key: String, _ value: String?) {
        raw(key, value.map(JSONText.quote) ?? "null")
    }

    mutating func integer(_ key: String, _ value: (some BinaryInteger)?) {
        raw(key, value.map { String($0) } ?? "null")
    }

    mutating func bool(_ key: String, _ value: Bool) {
        raw(key, value ? "true" : "false")
    }

    mutating func strings(_ key: String, _ values: [String]) {
        raw(key, "[" + values.map(JSONText.quote).joined(separator: ",") + "]")
    }

    /// A field holding an array of JSON texts.
    mutating func array(_ key: String, _ elements: [String]) {
        raw(key, "[" + elements.joined(separator: ",") + "]")
    }

    /// The finished object.
    var json: String { text + "}" }
}
