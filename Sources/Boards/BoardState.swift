public import APNs
public import Foundation
public import HeraldCore
public import LiveActivities

/// One member's line on a board.
public struct BoardMember: Sendable, Hashable {
    public var userID: String
    public var name: String
    /// Minutes away, as last posted; `nil` before the member posted.
    public var etaMinutes: Int?
    public var arrived: Bool
    /// When the member last posted.
    public var updatedAt: Date?
}

/// A live board in memory: the members' latest posts merged, and what its next broadcast
/// carries. A value without a clock of its own: the hub (``BoardHub``) holds one per activity
/// behind its lock and passes the time in.
///
/// ETAs live only here; arrivals and first posts are few, and the hub persists them.
public struct BoardState: Sendable {
    public private(set) var members: [BoardMember]
    private let index: [String: Int]
    /// A change the last broadcast did not carry.
    private(set) var dirty = false
    /// When the last broadcast was taken (``claim(at:interval:)``).
    private(set) var lastBroadcastAt: Date?
    /// The arrival alert the next broadcast carries, once.
    var pendingAlert: LiveActivityAlert?

    /// A board of `members`, with the arrivals and first posts already persisted and the ETAs
    /// known (`etas`: minutes and when, by user).
    public init(
        members: [LiveActivityMember],
        posted: [String: Date] = [:],
        arrived: Set<String> = [],
        etas: [String: (minutes: Int, at: Date)] = [:]
    ) {
        self.members = members.map { member in
            let eta = etas[member.userID]
            let hasArrived = arrived.contains(member.userID) || eta?.minutes == 0
            return BoardMember(
                userID: member.userID,
                name: member.name,
                etaMinutes: hasArrived ? 0 : eta?.minutes,
                arrived: hasArrived,
                updatedAt: eta?.at ?? posted[member.userID]
            )
        }
        var index: [String: Int] = [:]
        for (position, member) in members.enumerated() { index[member.userID] = position }
        self.index = index
    }

    /// What a post did.
    public enum PostOutcome: Sendable, Hashable {
        /// The user is not a member.
        case notAMember
        /// Nothing the board shows changed: no broadcast.
        case unchanged(firstPost: Bool)
        /// The board changed; `arrived` when this post is the member's arrival.
        case changed(firstPost: Bool, arrived: Bool)

        /// The member's first post since the board was loaded without one persisted.
        public var isFirstPost: Bool {
            switch self {
            case .notAMember: false
            case .unchanged(let first), .changed(let first, _): first
            }
        }
    }

    public func isMember(_ userID: String) -> Bool { index[userID] != nil }

    /// Merges `userID`'s `etaMinutes` (0: arrived) posted at `now`. An arrival is final: a later
    /// ETA from the same member changes nothing.
    public mutating func post(_ etaMinutes: Int, by userID: String, at now: Date) -> PostOutcome {
        guard let position = index[userID] else { return .notAMember }
        var member = members[position]
        let firstPost = member.updatedAt == nil
        member.updatedAt = now
        defer { members[position] = member }
        if member.arrived { return .unchanged(firstPost: firstPost) }
        if member.etaMinutes == etaMinutes { return .unchanged(firstPost: firstPost) }
        member.etaMinutes = etaMinutes
        member.arrived = etaMinutes == 0
        dirty = true
        return .changed(firstPost: firstPost, arrived: member.arrived)
    }

    public var arrivedCount: Int { members.reduce(0) { $0 + ($1.arrived ? 1 : 0) } }
    public var allArrived: Bool { arrivedCount == members.count }

    /// When a broadcast attempt should run for what waits: at once, or one interval after the
    /// last broadcast.
    func attemptAt(now: Date, interval: TimeInterval) -> Date {
        lastBroadcastAt.map { max(now, $0.addingTimeInterval(interval)) } ?? now
    }

    /// Takes the broadcast of what waits, when the interval since the last one passed: the board
    /// is clean after it.
    mutating func claim(at now: Date, interval: TimeInterval) -> BoardClaim {
        guard dirty || pendingAlert != nil else { return .nothing }
        if let last = lastBroadcastAt, now < last.addingTimeInterval(interval) {
            return .later(last.addingTimeInterval(interval))
        }
        defer {
            dirty = false
            pendingAlert = nil
            lastBroadcastAt = now
        }
        return .broadcast(board: json, alert: pendingAlert)
    }

    /// A broadcast that was not accepted: its change is still to be carried.
    mutating func broadcastFailed(alert: LiveActivityAlert?) {
        dirty = true
        if pendingAlert == nil { pendingAlert = alert }
    }

    /// The board as the content state's `"board"` and the client's answer show it: `{"members":
    /// [{"user_id", "name", "eta_minutes", "arrived", "updated_at"}], "arrived": n, "total": m}`.
    public var json: APNSJSONValue {
        // Read back from the one writer below (a broadcast at most once a second needs the tree).
        (try? JSONValue.parse(jsonBytes(), maximumDepth: 4)) ?? .null
    }

    /// The board as JSON text, keys in the order `JSONValue` writes them (sorted), written
    /// directly: the answer to every post, so no tree of values is built for it.
    public func jsonBytes() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(64 + members.count * 96)
        func append(_ text: StaticString) {
            text.withUTF8Buffer { out.append(contentsOf: $0) }
        }
        func append(_ number: Int64) { out.append(contentsOf: String(number).utf8) }
        append(#"{"arrived":"#)
        append(Int64(arrivedCount))
        append(#","members":["#)
        for (position, member) in members.enumerated() {
            if position > 0 { append(",") }
            append(#"{"arrived":"#)
            append(member.arrived ? "true" : "false")
            append(#","eta_minutes":"#)
            if let eta = member.etaMinutes { append(Int64(eta)) } else { append("null") }
            append(#","name":"#)
            JSONText.append(quoted: member.name, to: &out)
            append(#","updated_at":"#)
            if let updated = member.updatedAt { append(Int64(updated.timeIntervalSince1970)) } else { append("null") }
            append(#","user_id":"#)
            JSONText.append(quoted: member.userID, to: &out)
            append("}")
        }
        append(#"],"total":"#)
        append(Int64(members.count))
        append("}")
        return out
    }
}
