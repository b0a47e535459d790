/// An error from a cryptographic operation: a key that could not be read, a signature or
/// ciphertext that is malformed, or a message that failed authentication.
///
/// The ``description`` says what went wrong in a sentence and, where OpenSSL reported a reason,
/// adds OpenSSL's own error text. It never contains key material, plaintext or secrets.
///
/// Match on the kind of failure with ``code``:
///
/// ```swift
/// do {
///     let plaintext = try AESGCM.open(ciphertext, tag: tag, key: key, nonce: nonce)
/// } catch let error as CryptoError where error.code == .authenticationFailure {
///     // the message was tampered with, or the key is wrong
/// }
/// ```
public struct CryptoError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure. New kinds may be added; do not switch over them exhaustively.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: Hashable, Sendable {
            case invalidKey
            case unsupportedKey
            case invalidSignature
            case invalidArgument
            case authenticationFailure
            case internalFailure
        }

        private let base: Base

        private init(_ base: Base) {
            self.base = base
        }

        /// Key bytes or PEM text that cannot be parsed, or a key that is not a valid point or scalar.
        public static var invalidKey: Self { Self(.invalidKey) }
        /// A well-formed key of a kind this module does not use (RSA, P-384, Ed25519, encrypted PEM).
        public static var unsupportedKey: Self { Self(.unsupportedKey) }
        /// A signature of the wrong length or malformed DER.
        public static var invalidSignature: Self { Self(.invalidSignature) }
        /// An argument of the wrong size or range: an AES key, a nonce, an output length, a name.
        public static var invalidArgument: Self { Self(.invalidArgument) }
        /// AES-GCM authentication failed: the ciphertext, tag, nonce, key or associated data is wrong.
        public static var authenticationFailure: Self { Self(.authenticationFailure) }
        /// OpenSSL failed where it should not (allocation failure, broken installation).
        public static var internalFailure: Self { Self(.internalFailure) }

        public var description: String {
            switch base {
            case .invalidKey: "invalid key"
            case .unsupportedKey: "unsupported key"
            case .invalidSignature: "invalid signature"
            case .invalidArgument: "invalid argument"
            case .authenticationFailure: "authentication failure"
            case .internalFailure: "internal failure"
            }
        }
    }

    /// The kind of failure.
    public let code: Code
    /// What went wrong, as a sentence a person can act on. Never contains secrets.
    public let message: String
    /// OpenSSL's error text for the failure (from `ERR_error_string_n`), if OpenSSL reported one.
    public let openSSLError: String?

    /// An error found before or without OpenSSL (a wrong length, a missing PEM block). OpenSSL's
    /// error queue is left alone.
    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
        self.openSSLError = nil
    }

    /// An error OpenSSL reported: takes OpenSSL's pending errors on this thread as its cause,
    /// clearing them.
    static func openSSL(_ code: Code, _ message: String) -> Self {
        Self(code: code, message: message, openSSLError: OpenSSLErrorQueue.drain())
    }

    private init(code: Code, message: String, openSSLError: String?) {
        self.code = code
        self.message = message
        self.openSSLError = openSSLError
    }

    public var description: String {
        var text = "CryptoError(\(code)): \(message)"
        if let openSSLError {
            text += " (OpenSSL: \(openSSLError))"
        }
        return text
    }
}
