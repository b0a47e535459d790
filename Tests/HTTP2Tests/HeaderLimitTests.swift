import AsyncTestSupport
import Foundation
import HTTP2
import HTTP2TestSupport
import HeraldCore
import HeraldIO
import Testing

/// A server that answers with a header bomb is dropped: the client takes at most 64 KiB of
/// header list per stream (all its header blocks together, counted as RFC 9113 counts
/// SETTINGS_MAX_HEADER_LIST_SIZE) and 8 CONTINUATION frames per header block.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct HeaderLimitTests {
    struct BombCase: Sendable, CustomTestStringConvertible {
        var bomb: HostileHTTP2Server.Bomb
        /// What the error message names.
        var excess: String
        var testDescription: String { bomb.description }
    }

    /// Sends one request to a server answering with `bomb`; returns the client's error and the
    /// connection's status afterwards.
    func send(
        to bomb: HostileHTTP2Server.Bomb,
        metrics: MetricsRegistry = MetricsRegistry()
    ) async throws -> (
        result: Result<HTTP2Response, any Error>, status: HTTP2ClientConnection.Status, server: HostileHTTP2Server
    ) {
        let server = try HostileHTTP2Server(bomb: bomb)
        defer { server.close() }
        let caFile = FileManager.default.temporaryDirectory.appendingPathComponent("hostile-\(UUID()).pem").path
        try server.certificatePEM.write(toFile: caFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: caFile) }
        var tls = TLSConfiguration.makeClient()
        tls.additionalTrustRootsFile = caFile
        var configuration = clientConfiguration()
        configuration.metrics = metrics
        let connection = try await HTTP2ClientConnection.connect(
            host: "127.0.0.1",
            port: server.port,
            tls: try TLSContext(configuration: tls),
            configuration: configuration
        )
        let result = await Result(catching: { try await connection.send(HTTP2Request(method: "GET", path: "/bomb")) })
        try await eventually { connection.status.isClosed || !result.isFailure }
        let status = connection.status
        await connection.close()
        return (result, status, server)
    }

    @Test(
        "a header bomb drops the connection with headerListTooLarge",
        arguments: [
            BombCase(bomb: .manyFields(count: 2_000), excess: "over 65536 bytes"),
            BombCase(bomb: .hpackAmplification(references: 100_000), excess: "over 65536 bytes"),
            BombCase(bomb: .trailers(fields: 1_000), excess: "over 65536 bytes"),
            BombCase(bomb: .informationalFlood(totalBytes: 8 << 20), excess: "over 65536 bytes"),
            BombCase(bomb: .endlessContinuation, excess: "more than 8 CONTINUATION frames"),
        ]
    )
    func bombIsDropped(_ row: BombCase) async throws {
        let metrics = MetricsRegistry()
        let (result, status, server) = try await send(to: row.bomb, metrics: metrics)
        let error = try #require(result.failure as? HTTP2Error, "\(result)")
        #expect(error.code == .headerListTooLarge)
        #expect(!error.isSafeToRetry, "the server had the request")
        #expect(error.message.contains(row.excess), "\(error.message)")
        #expect(status.isClosed)
        #expect(status.failure?.code == .headerListTooLarge)
        #expect(
            metrics.value(
                "herald_http2_client_connection_failures_total",
                labels: [("cause", "header list too large")]
            ) == 1
        )
        try await eventually { server.current.closed == 1 }
        #expect(server.current.bombsSent == 1)
    }

    @Test("a response of 1,000 header fields (under 64 KiB as counted) arrives whole")
    func largeButAllowedHeaderList() async throws {
        let (result, status, _) = try await send(to: .manyFields(count: 1_000))
        let response = try result.get()
        #expect(response.status == 200)
        #expect(response.headers.values(for: "x-f").count == 1_000)
        #expect(response.headers.values(for: "x-f").last == "999")
        #expect(status.failure == nil)
    }
}

extension Result where Failure == any Error {
    init(catching body: () async throws -> Success) async {
        do {
            self = .success(try await body())
        } catch {
            self = .failure(error)
        }
    }

    var isFailure: Bool { failure != nil }

    var failure: (any Error)? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
