/// A key, certificate or id that cannot be used. The message names the problem and the fix and
/// never contains key material.
public struct APNSCredentialError: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private let name: String

        private init(_ name: String) {
            self.name = name
        }

        /// The key ID is not 10 letters or digits.
        public static let invalidKeyID = Code("invalid_key_id")
        /// The team ID is not 10 letters or digits.
        public static let invalidTeamID = Code("invalid_team_id")
        /// The PEM text is not a P-256 private key.
        public static let invalidKey = Code("invalid_key")
        /// A certificate or its key is not PEM.
        public static let invalidCertificate = Code("invalid_certificate")
        /// A key or certificate file cannot be read.
        public static let unreadableFile = Code("unreadable_file")
        /// Signing the provider token failed.
        public static let signingFailed = Code("signing_failed")

        public var description: String { name }
    }

    public let code: Code
    public let message: String

    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
