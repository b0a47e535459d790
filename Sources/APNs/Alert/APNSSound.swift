public import HeraldCore

/// The `aps.sound` value: a sound file's name, or a critical alert's dictionary.
public enum APNSSound: Sendable, Hashable, Encodable {
    /// A file in the app bundle or `Library/Sounds`, or `default`.
    case named(String)
    /// A critical alert sound: `{"critical": 1, "name": …, "volume": …}`, volume from 0 to 1.
    /// Needs Apple's critical-alert entitlement.
    case critical(name: String, volume: Double)

    /// The system sound.
    public static let `default` = APNSSound.named("default")

    /// A string, or `{"critical": 1, "name", "volume"}`.
    ///
    /// - Throws: `EncodingError` for a critical sound's volume outside 0...1.
    public func jsonValue() throws -> APNSJSONValue {
        switch self {
        case .named(let name):
            return .string(name)
        case .critical(let name, let volume):
            guard (0...1).contains(volume) else {
                throw EncodingError.invalidValue(
                    volume,
                    EncodingError.Context(
                        codingPath: [],
                        debugDescription: "a critical sound's volume must be from 0 to 1"
                    )
                )
            }
            return .object([
                "critical": .integer(1), "name": .string(name), "volume": APNSPayloadEncoding.number(volume),
            ])
        }
    }

    public func encode(to encoder: any Encoder) throws {
        try jsonValue().encode(to: encoder)
    }
}
