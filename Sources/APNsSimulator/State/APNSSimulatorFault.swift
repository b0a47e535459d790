public import APNs
import Foundation

/// A misbehaviour to inject, for reliability tests: an answer instead of success, added latency,
/// GOAWAY after a number of streams, or an abrupt TCP close (`POST /faults`).
///
/// ```swift
/// // Every third push answered 500 InternalServerError:
/// simulator.addFault(APNSSimulatorFault(.respond(status: 500, reason: .internalServerError), every: 3))
/// // Every connection sends GOAWAY {"reason":"Shutdown"} after its tenth stream:
/// simulator.addFault(APNSSimulatorFault(.goAway(afterStreams: 10, reason: .shutdown)))
/// ```
public struct APNSSimulatorFault: Sendable, Hashable {
    public enum Action: Sendable, Hashable {
        /// Answer `status` with `{"reason": reason}` instead of success (410 also carries a
        /// timestamp: now). Applies to requests that pass every check.
        case respond(status: Int, reason: APNSErrorReason)
        /// Wait this long before answering.
        case delay(Duration)
        /// After answering its `afterStreams`-th request, a connection sends GOAWAY with
        /// `{"reason": reason}` and closes once its open streams are answered.
        case goAway(afterStreams: Int, reason: APNSErrorReason, errorCode: UInt32 = 0)
        /// A connection's `afterStreams`-th request is not answered: the TCP connection is closed
        /// at once (no GOAWAY, no TLS close_notify).
        case closeConnection(afterStreams: Int)
    }

    /// The kinds of request a fault applies to.
    public enum RequestKind: String, Sendable, Hashable, CaseIterable, Codable {
        case device
        case broadcast
        /// Channel management (`/1/apps/…`).
        case channels
    }

    public var action: Action
    /// `respond` and `delay`: every `every`-th matching request (1: each). Counted per fault.
    public var every: Int
    /// `respond` and `delay`: only device pushes to this token.
    public var token: String?
    /// `respond` and `delay`: the fault is removed after firing this many times; `nil`: never.
    public var times: Int?
    /// `respond` and `delay`: which requests count. Default: device pushes and broadcasts.
    public var appliesTo: Set<RequestKind>

    public init(
        _ action: Action,
        every: Int = 1,
        token: String? = nil,
        times: Int? = nil,
        appliesTo: Set<RequestKind> = [.device, .broadcast]
    ) {
        self.action = action
        self.every = max(1, every)
        self.token = token?.lowercased()
        self.times = times
        self.appliesTo = appliesTo
    }
}

/// What the faults decided for one request.
struct FaultEffects: Sendable, Hashable {
    /// The answer to give instead of success.
    var rejection: SimulatorRejection?
    var delay: Duration = .zero
    /// GOAWAY after answering: reason and error code.
    var goAway: (reason: APNSErrorReason, errorCode: UInt32)?
    /// Close the TCP connection instead of answering.
    var close = false

    static func == (lhs: FaultEffects, rhs: FaultEffects) -> Bool {
        lhs.rejection == rhs.rejection && lhs.delay == rhs.delay && lhs.close == rhs.close
            && lhs.goAway?.reason == rhs.goAway?.reason && lhs.goAway?.errorCode == rhs.goAway?.errorCode
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(rejection)
        hasher.combine(delay)
        hasher.combine(close)
        hasher.combine(goAway?.reason)
    }
}

/// The installed faults with their counters.
struct FaultPlan: Sendable {
    struct Entry: Sendable {
        var id: Int
        var fault: APNSSimulatorFault
        var matched = 0
        var fired = 0
    }

    /// Faults held at once at most.
    let limit: Int
    private(set) var entries: [Entry] = []
    private var nextID = 1

    init(limit: Int = 1_000) {
        self.limit = max(1, limit)
    }

    var isEmpty: Bool { entries.isEmpty }

    /// Adds `fault` and returns its id; `nil` (nothing added) when `limit` faults are held.
    mutating func add(_ fault: APNSSimulatorFault) -> Int? {
        guard entries.count < limit else { return nil }
        let id = nextID
        nextID += 1
        entries.append(Entry(id: id, fault: fault))
        return id
    }

    mutating func removeAll() {
        entries.removeAll()
    }

    /// The connection-level faults for a connection's `streamNumber`-th request (from 1).
    func connectionEffects(streamNumber: Int) -> FaultEffects {
        var effects = FaultEffects()
        for entry in entries {
            switch entry.fault.action {
            case .goAway(let after, let reason, let code) where after == streamNumber:
                if effects.goAway == nil { effects.goAway = (reason, code) }
            case .closeConnection(let after) where after == streamNumber:
                effects.close = true
            default:
                break
            }
        }
        return effects
    }

    /// Delays for any request of `kind` (device pushes: to `token`), counting matches.
    mutating func delay(kind: APNSSimulatorFault.RequestKind, token: String?) -> Duration {
        var total = Duration.zero
        fire(kind: kind, token: token, delays: true) { action in
            guard case .delay(let duration) = action else { return false }
            total += duration
            return true
        }
        return total
    }

    /// The first `respond` fault that fires for a request that passed every check.
    mutating func response(
        kind: APNSSimulatorFault.RequestKind,
        token: String?,
        now: Date
    ) -> SimulatorRejection? {
        var rejection: SimulatorRejection?
        fire(kind: kind, token: token, delays: false) { action in
            guard rejection == nil, case .respond(let status, let reason) = action else { return false }
            rejection = SimulatorRejection(status: status, reason: reason, timestamp: status == 410 ? now : nil)
            return true
        }
        return rejection
    }

    /// Counts a match on every applicable `delay` (or `respond`) fault, fires those whose count is
    /// due and whose action `accepts` (which may decline), and removes those that have fired their
    /// `times`.
    private mutating func fire(
        kind: APNSSimulatorFault.RequestKind,
        token: String?,
        delays: Bool,
        _ accepts: (APNSSimulatorFault.Action) -> Bool
    ) {
        var exhausted = false
        for index in entries.indices {
            let fault = entries[index].fault
            guard fault.appliesTo.contains(kind) else { continue }
            if let wanted = fault.token, wanted != token { continue }
            switch fault.action {
            case .respond where !delays, .delay where delays: break
            default: continue
            }
            entries[index].matched += 1
            guard entries[index].matched % fault.every == 0, accepts(fault.action) else { continue }
            entries[index].fired += 1
            if let times = fault.times, entries[index].fired >= times { exhausted = true }
        }
        if exhausted {
            entries.removeAll { entry in entry.fault.times.map { entry.fired >= $0 } ?? false }
        }
    }
}
