import Foundation
import HTTP2
import HeraldCrypto
import HeraldIO
import Synchronization
import Testing

/// A server certificate (SAN `localhost` and `127.0.0.1`) and a client certificate, each
/// self-signed and made in process once per test run, and a trust file holding both: clients
/// trust the server through it, and a server that asks for client certificates trusts the client.
///
/// Made with HeraldCrypto rather than the `openssl` command: waiting for a child process from
/// Foundation's `Process` inside this lazy initializer could hang the whole test run.
struct TestCertificates: Sendable {
    let directory: String
    let caFile: String
    let serverChainPEM: String
    let serverKeyPEM: String
    let clientChainPEM: String
    let clientKeyPEM: String

    static let shared: TestCertificates = {
        do {
            return try make()
        } catch {
            fatalError("cannot make test certificates: \(error)")
        }
    }()

    private static func make() throws -> TestCertificates {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("herald-http2-tests-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let server = try SelfSignedCertificate.generate(
            commonName: "localhost",
            subjectAlternativeNames: ["localhost", "127.0.0.1"],
            key: P256PrivateKey(),
            validity: .seconds(2 * 86_400)
        )
        let client = try SelfSignedCertificate.generate(
            commonName: "client",
            subjectAlternativeNames: [],
            key: P256PrivateKey(),
            validity: .seconds(2 * 86_400)
        )
        let caFile = "\(directory)/trusted.pem"
        try (server.certificatePEM + client.certificatePEM).write(toFile: caFile, atomically: true, encoding: .utf8)
        return TestCertificates(
            directory: directory,
            caFile: caFile,
            serverChainPEM: server.certificatePEM,
            serverKeyPEM: server.privateKeyPEM,
            clientChainPEM: client.certificatePEM,
            clientKeyPEM: client.privateKeyPEM
        )
    }

    /// A server context presenting the server certificate.
    func serverContext(applicationProtocols: [String] = ["h2"]) throws -> TLSContext {
        var configuration = TLSConfiguration.makeServer(
            certificateChainPEM: serverChainPEM,
            privateKeyPEM: serverKeyPEM
        )
        configuration.applicationProtocols = applicationProtocols
        return try TLSContext(configuration: configuration)
    }

    /// A client context that trusts the test CA (in addition to the system roots).
    func clientContext(trustTestCA: Bool = true, serverNameOverride: String? = nil) throws -> TLSContext {
        var configuration = TLSConfiguration.makeClient()
        if trustTestCA { configuration.additionalTrustRootsFile = caFile }
        configuration.serverNameOverride = serverNameOverride
        return try TLSContext(configuration: configuration)
    }
}

/// Runs an ``HTTP2Server`` for the duration of `body`, then cancels it.
func withServer<T: Sendable>(
    tls: TLSContext?,
    configuration: HTTP2Server.Configuration = HTTP2Server.Configuration(),
    handler: @escaping HTTP2Server.Handler,
    _ body: (HTTP2Server) async throws -> T
) async throws -> T {
    let server = try HTTP2Server(configuration: configuration, tls: tls, handler: handler)
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await server.run() }
        do {
            let result = try await body(server)
            group.cancelAll()
            return result
        } catch {
            group.cancelAll()
            throw error
        }
    }
}

/// A client configuration for tests: no pings unless asked, a generous request timeout.
func clientConfiguration(
    requestTimeout: Duration? = .seconds(20),
    coalescingWindow: Duration? = nil
) -> HTTP2ClientConnection.Configuration {
    var configuration = HTTP2ClientConnection.Configuration()
    configuration.pingInterval = nil
    configuration.requestTimeout = requestTimeout
    configuration.coalescingWindow = coalescingWindow
    configuration.connectTimeout = .seconds(10)
    return configuration
}

/// Counts how many handlers run at once and the most there ever were.
final class ConcurrencyMeter: Sendable {
    private let state = Mutex((current: 0, maximum: 0))

    var current: Int { state.withLock { $0.current } }

    var maximum: Int { state.withLock { $0.maximum } }

    func reset() {
        state.withLock { $0 = (0, 0) }
    }

    func measure<T>(_ body: () async throws -> T) async rethrows -> T {
        state.withLock { state in
            state.current += 1
            state.maximum = max(state.maximum, state.current)
        }
        defer { state.withLock { $0.current -= 1 } }
        return try await body()
    }
}

/// A value the test replaces and handlers read.
final class SharedValue<Value: Sendable>: Sendable {
    private let value: Mutex<Value>

    init(_ value: Value) {
        self.value = Mutex(value)
    }

    var current: Value {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }
}

/// A count that concurrent handlers add to atomically.
final class AtomicCount: Sendable {
    private let count = Atomic<Int>(0)

    var value: Int { count.load(ordering: .relaxed) }

    /// Adds one and returns the new value.
    func increment() -> Int {
        count.add(1, ordering: .relaxed).newValue
    }
}

/// The largest value observed.
final class Peak: Sendable {
    private let state = Mutex(0)

    var value: Int { state.withLock { $0 } }

    func observe(_ value: Int) {
        state.withLock { $0 = max($0, value) }
    }
}

/// A thread-safe list for values seen by handlers.
final class Recorder<Value: Sendable>: Sendable {
    private let values = Mutex<[Value]>([])

    var all: [Value] { values.withLock { $0 } }

    func append(_ value: Value) {
        values.withLock { $0.append(value) }
    }
}

/// Bytes 0, 1, 2, … 250, 0, 1, … (251 is prime, so chunk boundaries do not line up with it).
func patternBytes(count: Int, seed: Int = 0) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: ($0 + seed) % 251) }
}

/// Catches the error `body` throws (fails the test when it returns normally).
func expectError<T>(
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> T
) async -> (any Error)? {
    do {
        _ = try await body()
        Issue.record("expected an error", sourceLocation: sourceLocation)
        return nil
    } catch {
        return error
    }
}

extension EventLoop {
    /// Returns once the loop has run everything handed to it (with `execute`) before this call.
    func roundTrip() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            execute { continuation.resume() }
        }
    }
}
