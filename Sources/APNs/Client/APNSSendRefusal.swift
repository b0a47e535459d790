/// Why a push was not taken by ``APNSClient/send(_:completion:)``: nothing was sent, and
/// the caller decides (wait and try again, or answer "try later").
///
/// ``description`` is a sentence without tokens or keys.
public struct APNSSendRefusal: Error, Sendable, Hashable, CustomStringConvertible {
    /// Compare with the static members.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private let name: String

        private init(_ name: String) {
            self.name = name
        }

        /// The budget's ``APNSSendBudget/Configuration/limit`` pushes already wait for APNs.
        public static let full = Code("full")
        /// The client is shutting down: its budget is closed.
        public static let unavailable = Code("unavailable")

        public var description: String { name }
    }

    public let code: Code
    /// Why, in a sentence.
    public let reason: String

    public init(_ code: Code, reason: String) {
        self.code = code
        self.reason = reason
    }

    public var description: String { "push not taken (\(code)): \(reason)" }
}
