import AsyncTestSupport
import Foundation
import HTTP2
import HeraldCore
import HeraldIO
import Testing

/// Failures around the edges: stream resets, refused and silent servers, metrics.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct HTTP2FailureTests {
    let certificates = TestCertificates.shared

    @Test("RST_STREAM: REFUSED_STREAM is safe to retry, other codes are not; the connection stays usable")
    func streamResets() async throws {
        let metrics = MetricsRegistry()
        let handler: HTTP2Server.Handler = { request in
            switch request.path {
            case "/refuse": .reset(.refusedStream)
            case "/fail": .reset(.internalError)
            default: HTTP2ServerResponse(status: 200)
            }
        }
        try await withServer(tls: try certificates.serverContext(), handler: handler) { server in
            var configuration = clientConfiguration()
            configuration.metrics = metrics
            let connection = try await HTTP2ClientConnection.connect(
                host: "localhost",
                port: server.port,
                tls: try certificates.clientContext(),
                configuration: configuration
            )
            let refused = try #require(
                await expectError { try await connection.send(HTTP2Request(path: "/refuse")) } as? HTTP2Error
            )
            #expect(refused.code == .streamRefused)
            #expect(refused.isSafeToRetry)
            #expect(refused.errorCode == .refusedStream)

            let failed = try #require(
                await expectError { try await connection.send(HTTP2Request(path: "/fail")) } as? HTTP2Error
            )
            #expect(failed.code == .streamReset)
            #expect(!failed.isSafeToRetry)
            #expect(failed.errorCode == .internalError)

            #expect(try await connection.send(HTTP2Request(path: "/ok")).status == 200)
            #expect(connection.status.isUsable)
            #expect(
                metrics.value(
                    "herald_http2_client_request_failures_total",
                    labels: [("cause", "stream refused"), ("safe_to_retry", "true")]
                ) == 1
            )
            #expect(metrics.value("herald_http2_client_connects_total", labels: [("result", "connected")]) == 1)
            await connection.close()
        }
    }

    @Test("nothing listening: connect fails at once with the socket error")
    func connectionRefused() async throws {
        let listener = try TCPListener(host: "127.0.0.1", port: 0)
        let port = listener.port
        listener.close()
        await listener.eventLoop.roundTrip()  // the close runs on the loop
        let error = await expectError {
            try await HTTP2ClientConnection.connect(
                host: "127.0.0.1",
                port: port,
                tls: nil,
                configuration: clientConfiguration()
            )
        }
        let http2Error = try #require(error as? HTTP2Error)
        #expect(http2Error.code == .connectFailed)
        #expect(http2Error.isSafeToRetry)
        #expect((http2Error.underlying as? IOError)?.errno == ECONNREFUSED)
    }

    @Test("a server that accepts but never speaks HTTP/2 fails the connect within the connect timeout")
    func silentServer() async throws {
        let listener = try TCPListener(host: "127.0.0.1", port: 0)
        defer { listener.close() }
        listener.start(tls: nil) { _ in SilentHandler() }
        var configuration = clientConfiguration()
        configuration.connectTimeout = .milliseconds(300)
        let error = await expectError {
            try await HTTP2ClientConnection.connect(
                host: "127.0.0.1",
                port: listener.port,
                tls: nil,
                configuration: configuration
            )
        }
        let http2Error = try #require(error as? HTTP2Error)
        #expect(http2Error.code == .connectFailed)
        #expect(http2Error.message.contains("SETTINGS"))
    }

    @Test("a TLS server that never answers the handshake hits the connect timeout")
    func silentTLSServer() async throws {
        let listener = try TCPListener(host: "127.0.0.1", port: 0)
        defer { listener.close() }
        listener.start(tls: nil) { _ in SilentHandler() }
        var configuration = clientConfiguration()
        configuration.connectTimeout = .milliseconds(300)
        let error = await expectError {
            try await HTTP2ClientConnection.connect(
                host: "127.0.0.1",
                port: listener.port,
                tls: try certificates.clientContext(),
                configuration: configuration
            )
        }
        let http2Error = try #require(error as? HTTP2Error)
        #expect((http2Error.underlying as? ChannelError)?.code == .connectTimeout)
    }

    @Test("cancelling connect throws CancellationError promptly")
    func cancelConnect() async throws {
        let listener = try TCPListener(host: "127.0.0.1", port: 0)
        defer { listener.close() }
        let accepted = Latch()
        listener.start(tls: nil) { _ in SilentHandler(accepted: accepted) }
        let task = Task {
            try await HTTP2ClientConnection.connect(
                host: "127.0.0.1",
                port: listener.port,
                tls: try certificates.clientContext(),
                configuration: clientConfiguration()
            )
        }
        try await accepted.wait()  // connect is under way: the TLS handshake waits for the server
        task.cancel()
        let result = await task.result
        #expect(throws: CancellationError.self) { try result.get() }
    }

    @Test("requests wait in FIFO order while the peer allows one stream")
    func fifo() async throws {
        let order = Recorder<String>()
        let gate = Latch()
        var configuration = HTTP2Server.Configuration()
        configuration.maxConcurrentStreams = 1
        let handler: HTTP2Server.Handler = { request in
            order.append(request.path)
            if request.path == "/0" {
                try? await gate.wait()  // hold the only stream
            }
            return HTTP2ServerResponse(status: 200)
        }
        try await withServer(tls: nil, configuration: configuration, handler: handler) { server in
            defer { gate.open() }  // also when the test fails early, so that the server can stop
            let connection = try await HTTP2ClientConnection.connect(
                host: "127.0.0.1",
                port: server.port,
                tls: nil,
                configuration: clientConfiguration()
            )
            // Submit one at a time (each after the previous is queued) while /0 holds the stream.
            let first = Task { try await connection.send(HTTP2Request(path: "/0")) }
            try await eventually { order.all == ["/0"] }
            var tasks = [first]
            for index in 1..<6 {
                tasks.append(Task { try await connection.send(HTTP2Request(path: "/\(index)")) })
                try await eventually { connection.status.queuedRequests == index }
            }
            #expect(connection.status.activeStreams == 1)
            gate.open()
            for task in tasks { _ = try await task.value }
            #expect(order.all == (0..<6).map { "/\($0)" })
            await connection.close()
        }
    }
}

/// Accepts bytes and never answers.
private final class SilentHandler: ChannelHandler {
    /// Opened when the connection is accepted.
    let accepted: Latch?

    init(accepted: Latch? = nil) {
        self.accepted = accepted
    }

    func channelActive(_ channel: Channel) { accepted?.open() }
    func channelRead(_ channel: Channel, _ bytes: UnsafeRawBufferPointer) {}
    func channelReadComplete(_ channel: Channel) {}
    func channelWritable(_ channel: Channel) {}
    func channelInactive(_ channel: Channel, error: (any Error)?) {}
}
