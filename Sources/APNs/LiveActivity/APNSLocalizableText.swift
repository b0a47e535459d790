public import HeraldCore

/// Text shown as given, or a key into the app's `Localizable.strings` with its arguments
/// (`{"loc-key": …, "loc-args": […]}`).
public enum APNSLocalizableText: Sendable, Hashable, Encodable, ExpressibleByStringLiteral {
    case text(String)
    case localized(key: String, arguments: [String] = [])

    public init(stringLiteral value: String) {
        self = .text(value)
    }

    /// A string, or `{"loc-key", "loc-args"?}`.
    public var jsonValue: APNSJSONValue {
        switch self {
        case .text(let text): .string(text)
        case .localized(let key, let arguments):
            arguments.isEmpty
                ? .object(["loc-key": .string(key)])
                : .object(["loc-key": .string(key), "loc-args": .array(arguments.map(APNSJSONValue.string))])
        }
    }

    public func encode(to encoder: any Encoder) throws {
        try jsonValue.encode(to: encoder)
    }
}
