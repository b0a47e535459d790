public import APNs
import Foundation
import HTTP2
import HTTPRouting
import HTTPServer
public import HeraldCore
import HeraldCrypto
import HeraldIO
import Synchronization

/// A validating APNs-compatible server: HTTP/2 over TLS (nghttp2) that answers device pushes,
/// broadcasts and channel management with Apple's statuses and reasons, records what it received,
/// and misbehaves on request — for tests, benchmarks and people without devices.
///
/// The sockets are bound when `init` returns (``port`` is known, also for port 0); requests are
/// answered while ``run()`` runs.
///
/// ```swift
/// var configuration = APNSSimulator.Configuration()
/// configuration.port = 0
/// configuration.keys = [APNSSimulatorKey(keyID: key.keyID, publicKey: key.privateKey.publicKey)]
/// configuration.teamID = key.teamID
/// configuration.topics = ["com.example.app"]
/// let simulator = try APNSSimulator(configuration: configuration)
/// try await withThrowingTaskGroup(of: Void.self) { group in
///     group.addTask { try await simulator.run() }
///     // APNS_SANDBOX_URL=simulator.url, APNS_CA_FILE=simulator.caFile
///     simulator.triggerGracefulShutdown()
/// }
/// ```
///
/// What it checks and in which order: docs/SIMULATOR.md (in code: `DevicePushValidator`,
/// `BroadcastValidator`, `ChannelRequestValidator`, `ConnectionAuthentication`, and
/// `CertificateIdentity` for clients that present a provider certificate instead of tokens).
/// Connections start with SETTINGS_MAX_CONCURRENT_STREAMS
/// ``Configuration/initialMaxConcurrentStreams`` (1) and get
/// ``Configuration/maxConcurrentStreams`` (1000) after their first success; nghttp2 refuses
/// streams above the limit. Graceful shutdown sends GOAWAY `{"reason":"Shutdown"}`.
public final class APNSSimulator: Service {
    public let configuration: Configuration
    /// The control API (deliveries, tokens, faults, channels) as an HTTP responder: served on
    /// ``Configuration/controlPort`` when set, and mountable on another server with
    /// ``APNSSimulatorControl/register(on:prefix:)``.
    public let control: APNSSimulatorControl
    /// The server certificate (PEM) when TLS is on; trust it to connect.
    public let certificatePEM: String?
    /// The file holding ``certificatePEM`` for a generated certificate (`APNS_CA_FILE`); `nil`
    /// for a provided one or without TLS.
    public let caFile: String?

    private let core: SimulatorCore
    private let server: HTTP2Server
    private let cleartextServer: HTTP2Server?
    private let controlServer: HTTPServer?
    private let removesCAFile: Bool
    private let stopping = Atomic(false)

    /// Binds the listeners (the control API binds when ``run()`` starts) and, for a generated
    /// certificate, writes it to its file.
    ///
    /// - Throws: ``APNSSimulatorError`` for a certificate or file problem, `IOError` when an
    ///   address cannot be bound.
    public init(configuration: Configuration) throws {
        self.configuration = configuration
        let core = SimulatorCore(configuration: configuration)
        self.core = core

        var identity: (certificate: String, key: String)?
        var certificateFile: String?
        switch configuration.tls {
        case .generated(let file):
            let names = Self.certificateNames(configuration)
            let generated = try SelfSignedCertificate.generate(
                commonName: "Herald APNs simulator",
                subjectAlternativeNames: names,
                key: P256PrivateKey()
            )
            identity = (generated.certificatePEM, generated.privateKeyPEM)
            certificateFile = file
        case .provided(let chain, let key):
            identity = (chain, key)
        case .disabled:
            identity = nil
        }
        let tls: TLSContext?
        do {
            tls = try identity.map {
                var server = TLSConfiguration.makeServer(certificateChainPEM: $0.certificate, privateKeyPEM: $0.key)
                // As APNs: a client may authenticate with a provider certificate instead of tokens.
                server.certificateVerification = .requestClientCertificate
                return try TLSContext(configuration: server)
            }
        } catch {
            throw APNSSimulatorError("the TLS certificate or key cannot be used: \(error)")
        }

        func http2Configuration(port: Int, listener: Int) -> HTTP2Server.Configuration {
            var settings = HTTP2Server.Configuration()
            settings.host = configuration.host
            settings.port = port
            settings.maxConcurrentStreams = configuration.initialMaxConcurrentStreams
            settings.maximumRequestBodySize = configuration.maximumRequestBodySize
            settings.eventLoop = configuration.eventLoop
            settings.logger = configuration.logger
            settings.onConnection = { connection in core.connections.register(connection, listener: listener) }
            return settings
        }
        self.server = try HTTP2Server(
            configuration: http2Configuration(port: configuration.port, listener: 0),
            tls: tls
        ) {
            await core.respond(to: $0, listener: 0)
        }
        self.cleartextServer = try configuration.cleartextPort.map { port in
            try HTTP2Server(configuration: http2Configuration(port: port, listener: 1), tls: nil) {
                await core.respond(to: $0, listener: 1)
            }
        }

        self.certificatePEM = identity?.certificate
        if case .generated = configuration.tls, let certificate = identity?.certificate {
            let path =
                certificateFile
                ?? FileManager.default.temporaryDirectory
                .appendingPathComponent("herald-apns-simulator-\(server.port).pem").path
            do {
                // Owner-only like every file Herald writes: clients of this user read it.
                try PrivateFile.write(Array(certificate.utf8), to: path)
            } catch {
                throw APNSSimulatorError("cannot write the simulator's certificate to \(path): \(error)")
            }
            self.caFile = path
            self.removesCAFile = certificateFile == nil
        } else {
            self.caFile = nil
            self.removesCAFile = false
        }

        let usesTLS = tls != nil
        let info = APNSSimulatorControl.Info(
            url: Self.url(host: configuration.host, port: server.port, tls: usesTLS),
            cleartextURL: cleartextServer.map { Self.url(host: configuration.host, port: $0.port, tls: false) },
            caFile: caFile,
            topics: configuration.topics,
            keys: configuration.keys.map { ($0.keyID, $0.teamID ?? configuration.teamID) },
            teamID: configuration.teamID,
            initialMaxConcurrentStreams: configuration.initialMaxConcurrentStreams,
            maxConcurrentStreams: configuration.maxConcurrentStreams
        )
        self.control = APNSSimulatorControl(core: core, info: info)
        if let controlPort = configuration.controlPort {
            var http = HTTPServer.Configuration()
            http.host = configuration.host
            http.port = controlPort
            http.shutdownTimeout = .seconds(2)
            self.controlServer = HTTPServer(
                configuration: http,
                responder: control,
                logger: Logger(
                    label: "herald.simulator.control",
                    level: configuration.logger.logLevel,
                    handler: configuration.logger.handler
                )
            )
        } else {
            self.controlServer = nil
        }
    }

    // MARK: Addresses

    /// The TLS (or, with ``TLS/disabled``, cleartext) port.
    public var port: Int { server.port }
    /// The extra cleartext port, when configured.
    public var cleartextPort: Int? { cleartextServer?.port }
    /// `https://HOST:PORT` (`http://` without TLS), with `127.0.0.1` for a wildcard host: what
    /// `APNS_SANDBOX_URL` and the other APNs URLs should say.
    public var url: String { control.info.url }
    /// `http://HOST:PORT` of the cleartext listener, when configured.
    public var cleartextURL: String? { control.info.cleartextURL }
    /// The endpoint for an ``APNsTransport/APNSConnectionPool``.
    public var endpoint: APNSEndpoint {
        APNSEndpoint(host: Self.clientHost(configuration.host), port: port, usesTLS: certificatePEM != nil)
    }

    /// The control API's port, once it listens (waits until then); `nil` when not configured.
    public func controlPort() async throws -> Int? {
        try await controlServer?.listeningPort()
    }

    /// `http://HOST:PORT` of the control API, once it listens; `nil` when not configured.
    public func controlURL() async throws -> String? {
        guard let port = try await controlPort() else { return nil }
        return Self.url(host: configuration.host, port: port, tls: false)
    }

    // MARK: Service

    /// Serves until ``triggerGracefulShutdown()`` or cancellation.
    public func run() async throws {
        defer {
            if removesCAFile, let caFile { try? FileManager.default.removeItem(atPath: caFile) }
        }
        let server = self.server
        let cleartextServer = self.cleartextServer
        let controlServer = self.controlServer
        configuration.logger.info(
            "APNs simulator listening",
            metadata: ["url": .string(url), "ca_file": .string(caFile ?? "none")]
        )
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { try await server.run() }
            if let cleartextServer { group.addTask { try await cleartextServer.run() } }
            if let controlServer { group.addTask { try await controlServer.run() } }
            if let idleTimeout = configuration.idleTimeout {
                group.addTask { [self] in await closeIdleConnections(after: idleTimeout) }
            }
        }
    }

    /// Sends GOAWAY `IdleTimeout` to connections idle for `timeout`, until shutdown.
    private func closeIdleConnections(after timeout: Duration) async {
        let interval = min(timeout / 4, .seconds(1))
        while !stopping.load(ordering: .relaxed), !Task.isCancelled {
            try? await Task.sleep(for: interval)
            for connection in core.connections.newlyIdle(timeout: timeout.nanoseconds) {
                configuration.logger.debug("closing an idle connection", metadata: ["connection": .int(connection.id)])
                connection.goAway(debugData: #"{"reason":"IdleTimeout"}"#)
            }
        }
    }

    /// Sends GOAWAY `{"reason":"Shutdown"}` on every connection, stops accepting, and lets
    /// ``run()`` return once the connections have answered their open streams.
    public func triggerGracefulShutdown() {
        stopping.store(true, ordering: .relaxed)
        for connection in core.connections.live() {
            connection.goAway(debugData: #"{"reason":"Shutdown"}"#)
        }
        server.triggerGracefulShutdown()
        cleartextServer?.triggerGracefulShutdown()
        controlServer?.triggerGracefulShutdown()
    }

    // MARK: State (the control API's operations, for code)

    /// Recorded deliveries, newest first.
    public func deliveries(_ filter: APNSSimulatorDeliveryFilter = .init()) -> [APNSSimulatorDelivery] {
        control.deliveries(filter)
    }

    /// Forgets every recorded delivery.
    public func removeAllDeliveries() {
        control.removeAllDeliveries()
    }

    /// Registers a device token for a topic, or marks it unregistered; `false` when it is a new
    /// token and ``Configuration/tokenLimit`` tokens are registered.
    @discardableResult
    public func setToken(_ state: APNSSimulatorTokenState) -> Bool {
        control.setToken(state)
    }

    /// Installs a fault; returns its id, or `nil` when ``Configuration/faultLimit`` faults are
    /// installed.
    @discardableResult
    public func addFault(_ fault: APNSSimulatorFault) -> Int? {
        control.addFault(fault)
    }

    /// Removes every fault.
    public func removeAllFaults() {
        control.removeAllFaults()
    }

    /// Every channel, by app then creation.
    public func channels() -> [APNSSimulatorChannel] {
        control.channels()
    }

    // MARK: Helpers

    private static func certificateNames(_ configuration: Configuration) -> [String] {
        var names = configuration.subjectAlternativeNames
        let host = configuration.host
        if !isWildcard(host), !names.contains(host) { names.append(host) }
        return names
    }

    private static func isWildcard(_ host: String) -> Bool {
        host == "0.0.0.0" || host == "::" || host.isEmpty
    }

    static func clientHost(_ host: String) -> String {
        isWildcard(host) ? "127.0.0.1" : host
    }

    static func url(host: String, port: Int, tls: Bool) -> String {
        let client = clientHost(host)
        let bracketed = client.contains(":") ? "[\(client)]" : client
        return "\(tls ? "https" : "http")://\(bracketed):\(port)"
    }
}
