/// Text shown as given, or a key into the app's `Localizable.strings` with its arguments
/// (`{"loc-key": …, "loc-args": […]}`).
public enum APNSLocalizableText: Sendable, Hashable, Encodable, ExpressibleByStringLiteral {
    case text(String)
    case localized(key: String, arguments: [String] = [])

    public init(stringLiteral value: String) {
        self = .text(value)
    }

    private enum CodingKeys: String, CodingKey {
        case key = "loc-key"
        case arguments = "loc-args"
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .text(let text):
            var container = encoder.singleValueContainer()
            try container.encode(text)
        case .localized(let key, let arguments):
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(key, forKey: .key)
            if !arguments.isEmpty { try container.encode(arguments, forKey: .arguments) }
        }
    }
}
