import AsyncTestSupport
import HeraldCrypto
import HeraldIO
import Synchronization
import Testing

/// How long a test's connect may take before it fails: a bound against a hang, not a measure.
/// `swift test` starts every suite at once on a 2-core machine, and a connect's name resolution
/// resumes on the cooperative pool behind them: a loaded run saw 15 connects to 127.0.0.1 give up
/// together after 10 s, each of which takes under 0.1 s alone.
let testConnectTimeout: Duration = .seconds(60)

/// Runs `body` on `loop`'s thread and returns what it returns.
func onLoop<T: Sendable>(_ loop: EventLoop, _ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        loop.execute { continuation.resume(returning: body()) }
    }
}

/// A handler that records what its channel hears, with latches for the events tests await.
final class RecordingHandler: ChannelHandler {
    struct State {
        var channel: Channel?
        var received: [UInt8] = []
        var inactiveCount = 0
        var inactiveError: (any Error)?
    }

    let state = Mutex(State())
    let active = Latch()
    let inactive = Latch()
    /// Opened once `expectedBytes` bytes have arrived.
    let receivedAll = Latch()
    private let expectedBytes: Int

    init(expectedBytes: Int = .max) {
        self.expectedBytes = expectedBytes
    }

    var channel: Channel? { state.withLock { $0.channel } }
    var received: [UInt8] { state.withLock { $0.received } }
    var inactiveCount: Int { state.withLock { $0.inactiveCount } }
    var inactiveError: (any Error)? { state.withLock { $0.inactiveError } }

    func channelActive(_ channel: Channel) {
        state.withLock { $0.channel = channel }
        active.open()
    }

    func channelRead(_ channel: Channel, _ bytes: UnsafeRawBufferPointer) {
        let count = state.withLock { state in
            state.received.append(contentsOf: bytes)
            return state.received.count
        }
        if count >= expectedBytes { receivedAll.open() }
    }

    func channelReadComplete(_ channel: Channel) {}

    func channelWritable(_ channel: Channel) {}

    func channelInactive(_ channel: Channel, error: (any Error)?) {
        state.withLock { state in
            state.inactiveCount += 1
            state.inactiveError = error
        }
        inactive.open()
    }
}

/// A listener on `host` whose accepted channels each get a new ``RecordingHandler``, kept in
/// ``accepted`` in the order accepted.
final class RecordingServer: Sendable {
    let listener: TCPListener
    private let handlers = Mutex<[RecordingHandler]>([])
    /// Opened when the first connection has been accepted (before any TLS handshake).
    let firstAccepted = Latch()

    init(
        host: String = "127.0.0.1",
        loop: EventLoop,
        tls: TLSContext? = nil,
        expectedBytes: Int = .max,
        start: Bool = true
    ) throws {
        listener = try TCPListener(host: host, port: 0, eventLoop: loop)
        if start { self.start(tls: tls, expectedBytes: expectedBytes) }
    }

    func start(tls: TLSContext? = nil, expectedBytes: Int = .max) {
        listener.start(tls: tls) { [self] _ in
            let handler = RecordingHandler(expectedBytes: expectedBytes)
            handlers.withLock { $0.append(handler) }
            firstAccepted.open()
            return handler
        }
    }

    var accepted: [RecordingHandler] { handlers.withLock { $0 } }

    /// The first accepted connection's handler, once there is one.
    func first() async throws -> RecordingHandler {
        try await withDeadline("a connection to be accepted") { [self] in
            try await firstAccepted.wait()
            return try #require(accepted.first)
        }
    }
}

/// Awaits `latch`, failing the test after a generous bound instead of hanging.
func waitFor(_ latch: Latch, _ what: String) async throws {
    try await withDeadline("\(what)") { try await latch.wait() }
}

/// A self-signed server certificate for `localhost`, `127.0.0.1` and `::1`, made once per run.
struct TestIdentity: Sendable {
    let certificatePEM: String
    let privateKeyPEM: String

    static let shared: TestIdentity = {
        do {
            let identity = try SelfSignedCertificate.generate(
                commonName: "localhost",
                subjectAlternativeNames: ["localhost", "127.0.0.1", "::1"],
                key: P256PrivateKey(),
                validity: .seconds(2 * 86_400)
            )
            return TestIdentity(certificatePEM: identity.certificatePEM, privateKeyPEM: identity.privateKeyPEM)
        } catch {
            fatalError("cannot make the test certificate: \(error)")
        }
    }()

    func serverContext(
        minimumVersion: TLSConfiguration.Version = .tls12,
        maximumVersion: TLSConfiguration.Version? = nil
    ) throws -> TLSContext {
        var configuration = TLSConfiguration.makeServer(
            certificateChainPEM: certificatePEM,
            privateKeyPEM: privateKeyPEM
        )
        configuration.minimumVersion = minimumVersion
        configuration.maximumVersion = maximumVersion
        return try TLSContext(configuration: configuration)
    }

    /// A client that trusts only this certificate.
    func clientContext(maximumVersion: TLSConfiguration.Version? = nil) throws -> TLSContext {
        var configuration = TLSConfiguration.makeClient()
        configuration.trustSystemRoots = false
        configuration.additionalTrustRootsPEM = certificatePEM
        configuration.maximumVersion = maximumVersion
        return try TLSContext(configuration: configuration)
    }
}

extension Channel {
    /// ``write(_:)`` for an array. Loop thread.
    func write(bytes: [UInt8]) throws(ChannelError) {
        var failure: ChannelError?
        bytes.withUnsafeBytes { buffer in
            do throws(ChannelError) {
                try write(buffer)
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
    }
}

/// A counter that closures on the loop and the test share.
final class Counter: Sendable {
    private let value: Atomic<Int>

    init(_ initial: Int = 0) {
        value = Atomic(initial)
    }

    var current: Int { value.load(ordering: .relaxed) }

    func add(_ amount: Int) {
        value.add(amount, ordering: .relaxed)
    }

    func store(_ newValue: Int) {
        value.store(newValue, ordering: .relaxed)
    }

    /// Takes one away if the counter is above zero; true when it did.
    func takeOne() -> Bool {
        var current = value.load(ordering: .relaxed)
        while current > 0 {
            let (exchanged, original) = value.compareExchange(
                expected: current,
                desired: current - 1,
                ordering: .relaxed
            )
            if exchanged { return true }
            current = original
        }
        return false
    }
}
