import Glibc

/// A system call failed.
public struct IOError: Error, Sendable, CustomStringConvertible {
    /// The call that failed, with its argument when that helps (`connect(127.0.0.1:443)`).
    public let operation: String
    /// The `errno` value.
    public let errno: Int32

    public init(operation: String, errno: Int32) {
        self.operation = operation
        self.errno = errno
    }

    public var description: String {
        "\(operation) failed: \(String(cString: strerror(errno))) (errno \(errno))"
    }
}

/// Why a ``Channel`` could not be opened or stopped working.
public struct ChannelError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: Hashable, Sendable {
            case connectTimeout, nameResolution, closed, closedDuringHandshake
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// TCP connect plus TLS handshake did not finish in time.
        public static let connectTimeout = Code(.connectTimeout)
        /// The host name did not resolve (getaddrinfo failed or returned nothing).
        public static let nameResolution = Code(.nameResolution)
        /// The channel is closed.
        public static let closed = Code(.closed)
        /// The peer closed the connection before the TLS handshake finished.
        public static let closedDuringHandshake = Code(.closedDuringHandshake)

        public var description: String {
            switch base {
            case .connectTimeout: "connect timeout"
            case .nameResolution: "name resolution failed"
            case .closed: "channel closed"
            case .closedDuringHandshake: "closed during TLS handshake"
            }
        }
    }

    public let code: Code
    /// A sentence with the details (host, port, resolver message).
    public let message: String

    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
