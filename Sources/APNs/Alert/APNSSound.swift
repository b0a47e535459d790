/// The `aps.sound` value: a sound file's name, or a critical alert's dictionary.
public enum APNSSound: Sendable, Hashable, Encodable {
    /// A file in the app bundle or `Library/Sounds`, or `default`.
    case named(String)
    /// A critical alert sound: `{"critical": 1, "name": …, "volume": …}`, volume from 0 to 1.
    /// Needs Apple's critical-alert entitlement.
    case critical(name: String, volume: Double)

    /// The system sound.
    public static let `default` = APNSSound.named("default")

    private enum CodingKeys: String, CodingKey {
        case critical, name, volume
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .named(let name):
            var container = encoder.singleValueContainer()
            try container.encode(name)
        case .critical(let name, let volume):
            guard (0...1).contains(volume) else {
                throw EncodingError.invalidValue(
                    volume,
                    EncodingError.Context(
                        codingPath: encoder.codingPath,
                        debugDescription: "a critical sound's volume must be from 0 to 1"
                    )
                )
            }
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(1, forKey: .critical)
            try container.encode(name, forKey: .name)
            try container.encode(volume, forKey: .volume)
        }
    }
}
