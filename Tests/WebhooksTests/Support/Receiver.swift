import Foundation
import HTTP2
import HTTPRouting
import HTTPServer
import HeraldCore
import HeraldCrypto
import HeraldIO
import Synchronization
import Testing

/// A self-signed certificate for `localhost` and `127.0.0.1`, made once per run, and the file
/// that makes clients trust it (`WebhookConfiguration.caFile`).
struct ReceiverCertificate: Sendable {
    let caFile: String
    let chainPEM: String
    let keyPEM: String

    static let shared: ReceiverCertificate = {
        do {
            let certificate = try SelfSignedCertificate.generate(
                commonName: "localhost",
                subjectAlternativeNames: ["localhost", "127.0.0.1"],
                key: P256PrivateKey(),
                validity: .seconds(2 * 86_400)
            )
            let caFile = FileManager.default.temporaryDirectory
                .appendingPathComponent("herald-webhooks-tests-\(UUID().uuidString).pem").path
            try certificate.certificatePEM.write(toFile: caFile, atomically: true, encoding: .utf8)
            return ReceiverCertificate(
                caFile: caFile,
                chainPEM: certificate.certificatePEM,
                keyPEM: certificate.privateKeyPEM
            )
        } catch {
            fatalError("cannot make the receiver's certificate: \(error)")
        }
    }()
}

/// One POST the receiver took.
struct ReceivedDelivery: Sendable {
    /// Header fields by lowercase name (the last of repeated ones).
    var headers: [String: String]
    var body: [UInt8]
    /// The `id` and `type` of each event in `{"events": [...]}`, in order.
    var eventIDs: [String]
    var types: [String]

    init(headers: [(name: String, value: String)], body: [UInt8]) {
        self.headers = Dictionary(headers.map { ($0.name.lowercased(), $0.value) }, uniquingKeysWith: { $1 })
        self.body = body
        let events = Self.events(in: body)
        eventIDs = events.compactMap { $0["id"] as? String }
        types = events.compactMap { $0["type"] as? String }
    }

    /// The events of the body, parsed.
    var events: [[String: Any]] { Self.events(in: body) }

    private static func events(in body: [UInt8]) -> [[String: Any]] {
        let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
        return (object?["events"] as? [[String: Any]]) ?? []
    }
}

/// A webhook receiver: an HTTP/2 server over TLS with the test certificate (or cleartext) that
/// records each request and answers with the next scripted status (200 when none is left).
final class Receiver: Sendable {
    private struct State {
        var deliveries: [ReceivedDelivery] = []
        var statuses: [Int] = []
    }

    /// The handler's and the test's shared record (a class: a `Mutex` cannot be copied).
    private final class Log: Sendable {
        let state = Mutex(State())
    }

    private let log = Log()
    let server: HTTP2Server
    let isTLS: Bool

    /// - Parameter responseHeaders: sent with every answer (a header bomb, for the limit's test).
    init(
        statuses: [Int] = [],
        tls: Bool = true,
        applicationProtocols: [String] = ["h2"],
        responseHeaders: HTTP2Headers = [:]
    ) throws {
        log.state.withLock { $0.statuses = statuses }
        var context: TLSContext?
        if tls {
            var configuration = TLSConfiguration.makeServer(
                certificateChainPEM: ReceiverCertificate.shared.chainPEM,
                privateKeyPEM: ReceiverCertificate.shared.keyPEM
            )
            configuration.applicationProtocols = applicationProtocols
            context = try TLSContext(configuration: configuration)
        }
        var configuration = HTTP2Server.Configuration()
        configuration.logger = Logger(label: "test.receiver", level: .error)
        isTLS = tls
        let log = self.log
        server = try HTTP2Server(configuration: configuration, tls: context) { request in
            let delivery = ReceivedDelivery(
                headers: request.headers.map { (name: $0.name, value: $0.value) },
                body: request.body
            )
            let status = log.state.withLock { state -> Int in
                state.deliveries.append(delivery)
                return state.statuses.isEmpty ? 200 : state.statuses.removeFirst()
            }
            return HTTP2ServerResponse(status: status, headers: responseHeaders)
        }
    }

    var url: String { "\(isTLS ? "https" : "http")://127.0.0.1:\(server.port)/hooks/herald?team=1" }

    var deliveries: [ReceivedDelivery] { log.state.withLock { $0.deliveries } }

    /// Runs the server for the duration of `body`.
    func run<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await self.server.run() }
            do {
                let result = try await body()
                group.cancelAll()
                return result
            } catch {
                group.cancelAll()
                throw error
            }
        }
    }
}

/// A webhook receiver speaking HTTP/1.1 only, in cleartext: Herald's own HTTP server
/// (libmicrohttpd) on 127.0.0.1, recording each request and answering the next scripted status.
final class HTTP1Receiver: Sendable {
    private struct State {
        var deliveries: [ReceivedDelivery] = []
        var statuses: [Int] = []
    }

    /// The handler's and the test's shared record (a class: a `Mutex` cannot be copied).
    private final class Log: Sendable, HTTPResponder {
        let state = Mutex(State())

        func respond(to request: HTTPRequest, answer: HTTPResponseSink) {
            let delivery = ReceivedDelivery(
                headers: request.headers.map { (name: $0.name, value: $0.value) },
                body: request.body
            )
            let status = state.withLock { state -> Int in
                state.deliveries.append(delivery)
                return state.statuses.isEmpty ? 200 : state.statuses.removeFirst()
            }
            var response = HTTPResponse(status: status)
            if (300..<400).contains(status) { response.headers.replaceOrAdd(name: "Location", value: "/elsewhere") }
            for (name, value) in responseHeaders { response.headers.add(name: name, value: value) }
            answer(response)
        }

        let responseHeaders: [(String, String)]

        init(responseHeaders: [(String, String)]) {
            self.responseHeaders = responseHeaders
        }
    }

    private let log: Log
    private let server: HTTPServer

    /// - Parameter responseHeaders: sent with every answer (a header bomb, for the limit's test).
    init(statuses: [Int] = [], responseHeaders: [(String, String)] = []) {
        log = Log(responseHeaders: responseHeaders)
        log.state.withLock { $0.statuses = statuses }
        var configuration = HTTPServer.Configuration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        server = HTTPServer(
            configuration: configuration,
            responder: log,
            middleware: [],
            logger: Logger(label: "test.receiver", level: .error),
            metrics: MetricsRegistry()
        )
    }

    var deliveries: [ReceivedDelivery] { log.state.withLock { $0.deliveries } }

    /// Runs the server for the duration of `body`, which gets the receiver's port.
    func run<T: Sendable>(_ body: (_ port: Int) async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await self.server.run() }
            do {
                let result = try await body(try await server.listeningPort())
                server.triggerGracefulShutdown()
                try await group.waitForAll()
                return result
            } catch {
                server.triggerGracefulShutdown()
                group.cancelAll()
                throw error
            }
        }
    }
}
