public import APNs
public import Foundation
public import Storage

/// A poll that became final, as its `poll.finalized` webhook event reports it.
public struct PollEvent: Sendable, Hashable {
    /// What made it final.
    public enum Reason: String, Sendable, Hashable, CaseIterable {
        /// Every member voted.
        case allVoted = "all_voted"
        /// `POST /v1/polls/{id}/finalize` with the API key.
        case api
        /// `POST /v1/polls/{id}/finalize` with the host's client token.
        case host
        /// Its `closes_at` came.
        case closesAt = "closes_at"
    }

    public var id: UUID
    public var app: String
    public var environment: APNSEnvironment
    public var reason: Reason
    /// The result, with the names of who chose each option.
    public var result: PollTally
    public var at: Date
}

/// Hears about polls that became final, inside the transaction that made them final: what it
/// writes (a webhook event) commits or rolls back with the change, so there is exactly one per
/// poll. `herald serve` gives the webhooks' one.
public protocol PollEvents: Sendable {
    /// Records `events` using `executor`, the finalizing transaction. Throwing rolls it back.
    func pollsFinalized(_ events: [PollEvent], on executor: any DatabaseExecutor) async throws

    /// Called after such a transaction committed (to wake what delivers the events).
    func pollEventsCommitted()
}
