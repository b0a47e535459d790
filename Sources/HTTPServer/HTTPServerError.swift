/// Why an ``HTTPServer`` could not start or answer ``HTTPServer/listeningPort()``.
public struct HTTPServerError: Error, Sendable, Equatable, CustomStringConvertible {
    private enum Code: Sendable, Equatable {
        case alreadyRunning
        case invalidConfiguration
        case startFailed
        case notListening
    }

    private let code: Code
    /// Details for a person; never contains request data.
    public let reason: String

    private init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    /// `run()` was called on a server that had already been started.
    public static let alreadyRunning = HTTPServerError(.alreadyRunning, "run() was already called on this server")

    /// The configuration cannot work, e.g. a port outside 0…65535 or an unparsable host.
    public static func invalidConfiguration(_ reason: String) -> HTTPServerError {
        HTTPServerError(.invalidConfiguration, reason)
    }

    /// libmicrohttpd could not start, e.g. because the address is in use.
    public static func startFailed(_ reason: String) -> HTTPServerError {
        HTTPServerError(.startFailed, reason)
    }

    /// The server stopped (or failed to start) before it was listening.
    public static let notListening = HTTPServerError(.notListening, "the server is not listening")

    /// Compares the kind of failure only, so `error == .startFailed("")` asks "did it fail to
    /// start?" whatever the reason.
    public static func == (lhs: HTTPServerError, rhs: HTTPServerError) -> Bool {
        lhs.code == rhs.code
    }

    public var description: String {
        switch code {
        case .alreadyRunning, .notListening: "HTTPServerError: \(reason)"
        case .invalidConfiguration: "HTTPServerError: invalid configuration: \(reason)"
        case .startFailed: "HTTPServerError: could not start: \(reason)"
        }
    }
}
