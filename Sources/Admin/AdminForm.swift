import HTTPRouting

/// A form's fields, from an `application/x-www-form-urlencoded` body.
struct AdminForm: Sendable {
    private var fields: [(name: String, value: String)] = []

    init(_ pairs: [(name: String, value: String)]) {
        fields = pairs
    }

    /// - Throws: ``HTTPRouting/HTTPError`` 400 naming a field that is not percent-encoded UTF-8.
    init(_ request: HTTPRequest) throws(HTTPError) {
        guard !request.body.isEmpty else { return }
        for part in request.body.split(separator: UInt8(ascii: "&")) {
            let pair = part.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            let rawName = String(decoding: pair[0], as: UTF8.self)
            let rawValue = pair.count > 1 ? String(decoding: pair[1], as: UTF8.self) : ""
            guard let name = RequestTarget.percentDecode(rawName, plusAsSpace: true),
                let value = RequestTarget.percentDecode(rawValue, plusAsSpace: true)
            else {
                throw HTTPError(
                    status: 400,
                    code: "invalid_form",
                    message: "a field of the form is not percent-encoded UTF-8: send the form from the console's page",
                    field: "body"
                )
            }
            fields.append((name, value))
        }
    }

    /// The first value of `name`, `nil` when absent.
    subscript(name: String) -> String? {
        fields.first { $0.name == name }?.value
    }

    /// `value` percent-encoded for a query or a form: unreserved characters as they are.
    static func encode(_ value: String) -> String {
        var out = ""
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"), UInt8(ascii: "/"), UInt8(ascii: ":"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let digits = Array("0123456789ABCDEF".unicodeScalars)
                out += "%"
                out.unicodeScalars.append(digits[Int(byte >> 4)])
                out.unicodeScalars.append(digits[Int(byte & 0x0F)])
            }
        }
        return out
    }
}
