/// A schedule that cannot be parsed; the message says what to fix.
public struct ScheduleError: Error, Sendable, Hashable, CustomStringConvertible {
    /// One sentence naming the part that is wrong, what is wrong with it and what is allowed.
    public let message: String

    public init(message: String) {
        self.message = message
    }

    public var description: String { message }
}
