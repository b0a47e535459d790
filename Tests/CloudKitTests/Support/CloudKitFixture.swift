import APNs
import APNsSimulator
import CloudKit
import Foundation
import HTTP2
import HTTPRouting
import HeraldCore
import HeraldCrypto
import HeraldIO
import Synchronization
import Testing

/// The wall clock shifted by `offset`, whose sleeps return at once and are recorded: retry waits
/// are checked by what was asked for, not by how long the test took.
final class RecordingClock: HeraldClock {
    private let state = Mutex<(offset: TimeInterval, sleeps: [Duration])>((0, []))

    init(offset: TimeInterval = 0) {
        state.withLock { $0.offset = offset }
    }

    var sleeps: [Duration] { state.withLock { $0.sleeps } }

    func now() -> Date { Date().addingTimeInterval(state.withLock { $0.offset }) }
    func uptime() -> Duration { SystemClock().uptime() }
    func sleep(until deadline: Date) async throws {
        try await sleep(for: Duration(timeInterval: max(0, deadline.timeIntervalSince(now()))))
    }
    func sleep(for duration: Duration) async throws {
        state.withLock { $0.sleeps.append(duration) }
        await Task.yield()
    }
}

/// A running simulator that serves CloudKit for one generated key.
struct CloudKitFixture: Sendable {
    static let container = "iCloud.com.example.app"
    static let keyID = "ck0123456789abcdef"
    static let token1 = String(repeating: "ab", count: 32)
    static let token2 = String(repeating: "cd", count: 32)

    let simulator: APNSSimulator
    let privateKey: P256PrivateKey

    var signer: CloudKitSigner { CloudKitSigner(keyID: Self.keyID, privateKey: privateKey) }

    /// A client of the simulator, over HTTP/2 with TLS trusting its certificate.
    func client(
        signer: CloudKitSigner? = nil,
        clock: any HeraldClock = RecordingClock(),
        attempts: Int = 4
    ) throws -> CloudKitClient {
        var configuration = CloudKitClient.Configuration()
        configuration.url = simulator.url
        configuration.caFile = simulator.caFile
        configuration.connectTimeout = .seconds(60)
        configuration.clock = clock
        configuration.maximumAttempts = attempts
        configuration.logger = Logger(label: "test.cloudkit", level: .error)
        return try CloudKitClient(signer: signer ?? self.signer, configuration: configuration)
    }

    /// Calls the control API in memory.
    func control(
        _ method: String,
        _ path: String,
        body: String = ""
    ) async throws -> (
        status: Int, json: APNSJSONValue?
    ) {
        let response = try await simulator.control.respond(
            to: HTTPRequest(method: method, path: path, body: Array(body.utf8))
        )
        return (response.status, response.body.isEmpty ? nil : try APNSJSONValue(parsing: response.body))
    }

    /// POSTs `body` to `path` signed by this fixture's key, over a fresh HTTP/2 connection.
    func raw(
        _ path: String,
        body: String,
        signer: CloudKitSigner? = nil,
        date: Date = Date()
    ) async throws
        -> (status: Int, json: APNSJSONValue?)
    {
        var tls = TLSConfiguration.makeClient()
        tls.additionalTrustRootsFile = simulator.caFile
        var options = HTTP2ClientConnection.Configuration()
        options.connectTimeout = .seconds(60)
        let connection = try await HTTP2ClientConnection.connect(
            host: "127.0.0.1",
            port: simulator.port,
            tls: tls,
            configuration: options
        )
        let bytes = Array(body.utf8)
        let headers = try (signer ?? self.signer).sign(body: bytes, subpath: path, date: date)
        var request = HTTP2Request(method: "POST", path: path, body: bytes)
        for field in headers.fields { request.headers.add(name: field.name.lowercased(), value: field.value) }
        let response = try await connection.send(request)
        await connection.close()
        return (response.status, response.body.isEmpty ? nil : try APNSJSONValue(parsing: response.body))
    }

    static func path(_ operation: String, environment: String = "development") -> String {
        "/database/1/\(container)/\(environment)/public/records/\(operation)"
    }
}

/// Runs `body` with a simulator serving CloudKit (and APNs) on free ports.
func withCloudKitSimulator<T: Sendable>(
    configure: (inout APNSSimulator.Configuration) -> Void = { _ in },
    _ body: (CloudKitFixture) async throws -> T
) async throws -> T {
    let privateKey = P256PrivateKey()
    let local = try APNSSimulator.inProcess(topics: ["com.example.app"]) { configuration in
        configuration.logger = Logger(label: "test.simulator", level: .error)
        configuration.cloudKitKeys = [
            APNSSimulatorCloudKitKey(keyID: CloudKitFixture.keyID, publicKey: privateKey.publicKey)
        ]
        configure(&configuration)
    }
    let fixture = CloudKitFixture(simulator: local.simulator, privateKey: privateKey)
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await local.simulator.run() }
        do {
            let result = try await body(fixture)
            group.cancelAll()
            return result
        } catch {
            group.cancelAll()
            throw error
        }
    }
}

/// The error `body` throws, as a ``CloudKitError``.
func cloudKitError<T>(_ body: () async throws -> T) async -> CloudKitError? {
    do {
        _ = try await body()
        Issue.record("no error was thrown")
        return nil
    } catch let error as CloudKitError {
        return error
    } catch {
        Issue.record("not a CloudKitError: \(error)")
        return nil
    }
}

/// A generated key's PEM texts.
enum P256PrivateKeyPEM {
    static func make() -> (privatePEM: String, publicPEM: String) {
        let key = P256PrivateKey()
        return (key.pemRepresentation, key.publicKey.pemRepresentation)
    }
}
