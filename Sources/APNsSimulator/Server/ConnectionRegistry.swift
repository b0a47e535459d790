import Foundation
import HTTP2
import HeraldIO
import Synchronization

/// One HTTP/2 connection's simulator state: how it authenticates (provider tokens, or the client
/// certificate of its TLS handshake), its provider-token state (bound team and key, token in use,
/// verified tokens), its request count, and whether its stream limit has been raised.
final class SimulatorConnection: Sendable {
    private struct State: Sendable {
        var authentication = ConnectionAuthentication()
        var requests = 0
    }

    /// The connection's id, unique within its listener.
    let id: Int
    /// Weak: the simulator must not keep a closed connection's session alive.
    weak let handle: HTTP2ServerConnection?
    let credentials: ConnectionCredentials
    private let state = Mutex(State())
    private let streamLimitRaised = Atomic<Bool>(false)
    private let streamLimitLowered = Atomic<Bool>(false)
    /// When the connection last had a request or a PING (monotonic nanoseconds), and the PINGs
    /// counted then.
    private let lastActive: Atomic<UInt64>
    private let pingsSeen = Atomic<Int>(0)
    /// Sent GOAWAY `IdleTimeout` already.
    private let closedForIdleness = Atomic<Bool>(false)

    init(handle: HTTP2ServerConnection) {
        self.id = handle.id
        self.handle = handle
        self.credentials = ConnectionCredentials(handle.peerCertificate)
        self.lastActive = Atomic(EventLoop.monotonicNanoseconds())
    }

    /// Whether the connection has had neither a request nor a PING for `timeout` nanoseconds and
    /// was not told so yet; true once per connection.
    func claimIdleness(timeout: UInt64, now: UInt64) -> Bool {
        if let pings = handle?.pingsReceived, pings != pingsSeen.load(ordering: .relaxed) {
            pingsSeen.store(pings, ordering: .relaxed)
            lastActive.store(now, ordering: .relaxed)
            return false
        }
        guard now &- lastActive.load(ordering: .relaxed) >= timeout else { return false }
        return closedForIdleness.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged
    }

    /// Counts a request and, when `authenticate` is set, checks its provider token.
    ///
    /// - Returns: the request's number on this connection (from 1) and the authentication result
    ///   (`nil` when not authenticated).
    func beginRequest(
        authorization: String?,
        authenticate: Bool,
        now: Date,
        rules: ProviderTokenRules,
        verifier: ProviderTokenVerifier
    ) -> (streamNumber: Int, authentication: AuthenticationResult?) {
        lastActive.store(EventLoop.monotonicNanoseconds(), ordering: .relaxed)
        return state.withLock { state in
            state.requests += 1
            guard authenticate else { return (state.requests, nil) }
            let result = state.authentication.authenticate(
                authorization: authorization,
                now: now,
                rules: rules,
                verify: verifier.verify
            )
            return (state.requests, result)
        }
    }

    /// True exactly once: for the first successful request.
    func claimFirstSuccess() -> Bool {
        guard !streamLimitRaised.load(ordering: .relaxed) else { return false }
        return streamLimitRaised.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged
    }

    /// True when a rejection should lower the stream limit: the limit was raised and is not
    /// lowered already.
    func claimLowering() -> Bool {
        guard streamLimitRaised.load(ordering: .relaxed) else { return false }
        return streamLimitLowered.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged
    }

    /// True when a success should restore a lowered stream limit.
    func claimRestoring() -> Bool {
        guard streamLimitLowered.load(ordering: .relaxed) else { return false }
        return streamLimitLowered.compareExchange(expected: true, desired: false, ordering: .relaxed).exchanged
    }

    /// Distinct provider tokens verified on this connection so far.
    var tokenVerifications: Int {
        state.withLock { $0.authentication.verifications }
    }
}

/// The live connections of every listener, looked up per request.
final class ConnectionRegistry: Sendable {
    private struct Key: Hashable {
        var listener: Int
        var id: Int
    }

    private let connections = Mutex<[Key: SimulatorConnection]>([:])

    /// Notes a new connection (called on the event loop when it is established) and forgets the
    /// ones that have closed since.
    func register(_ handle: HTTP2ServerConnection, listener: Int) {
        let connection = SimulatorConnection(handle: handle)
        connections.withLock { connections in
            connections = connections.filter { $0.value.handle != nil }
            connections[Key(listener: listener, id: handle.id)] = connection
        }
    }

    /// The state of the connection `handle`, made on first use.
    func connection(for handle: HTTP2ServerConnection, listener: Int) -> SimulatorConnection {
        let key = Key(listener: listener, id: handle.id)
        return connections.withLock { connections in
            if let existing = connections[key], existing.handle === handle { return existing }
            let connection = SimulatorConnection(handle: handle)
            connections[key] = connection
            return connection
        }
    }

    /// The connections still open.
    func live() -> [HTTP2ServerConnection] {
        connections.withLock { connections in connections.values.compactMap(\.handle) }
    }

    /// The open connections idle for `timeout` nanoseconds that were not yet told so.
    func newlyIdle(timeout: UInt64) -> [HTTP2ServerConnection] {
        let now = EventLoop.monotonicNanoseconds()
        let candidates = connections.withLock { Array($0.values) }
        return candidates.compactMap { connection in
            guard let handle = connection.handle, connection.claimIdleness(timeout: timeout, now: now) else {
                return nil
            }
            return handle
        }
    }
}
