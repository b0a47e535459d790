import AsyncTestSupport
import Foundation
import HTTP2
import HeraldCore
import HeraldIO
import Synchronization
import Testing

/// Real sockets on 127.0.0.1: the nghttp2 client against the nghttp2 server, over TLS with a
/// certificate made at run time (plus a cleartext case).
@Suite(.serialized, .timeLimit(.minutes(2)))
struct HTTP2ConnectionTests {
    let certificates = TestCertificates.shared

    /// A connection to `server` over TLS that trusts the test certificates.
    func connect(
        to server: HTTP2Server,
        host: String = "localhost",
        configuration: HTTP2ClientConnection.Configuration = clientConfiguration()
    ) async throws -> HTTP2ClientConnection {
        try await HTTP2ClientConnection.connect(
            host: host,
            port: server.port,
            tls: try certificates.clientContext(),
            configuration: configuration
        )
    }

    /// Echoes the body, the stream id, the `x-index` header and every `x-dup` value.
    static let echo: HTTP2Server.Handler = { request in
        var headers: HTTP2Headers = [
            "x-stream-id": String(request.streamID),
            "x-method": request.method,
            "x-path": request.path,
            "x-authority": request.authority,
        ]
        if let index = request.headers["x-index"] { headers.add(name: "x-index", value: index) }
        headers.add(name: "x-dup", value: request.headers.values(for: "x-dup").joined(separator: ","))
        return HTTP2ServerResponse(status: 200, headers: headers, body: request.body)
    }

    private func runConcurrentEcho(connection: HTTP2ClientConnection, count: Int) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<count {
                group.addTask {
                    var request = HTTP2Request(
                        path: "/echo/\(index)",
                        body: Array("body-\(index)-".utf8) + patternBytes(count: index % 700, seed: index)
                    )
                    request.pathNeverIndexed = true
                    request.headers.add(name: "X-Index", value: String(index))
                    request.headers.add(name: "x-dup", value: "a\(index)")
                    request.headers.add(name: "x-dup", value: "b\(index)", neverIndex: true)
                    let response = try await connection.send(request)
                    #expect(response.status == 200)
                    #expect(response.headers["x-index"] == String(index))
                    #expect(response.headers["x-path"] == "/echo/\(index)")
                    #expect(response.headers["x-method"] == "POST")
                    #expect(response.headers["x-dup"] == "a\(index),b\(index)")
                    #expect(response.body == request.body)
                }
            }
            try await group.waitForAll()
        }
    }

    @Test("many concurrent requests with bodies on one TLS connection")
    func manyConcurrentRequestsOverTLS() async throws {
        try await withServer(tls: try certificates.serverContext(), handler: Self.echo) { server in
            let connection = try await connect(to: server, host: "127.0.0.1")
            #expect(connection.status.isUsable)
            #expect(connection.status.maxConcurrentStreams == 100)
            try await runConcurrentEcho(connection: connection, count: 500)
            // The status is a snapshot published after each batch of events: it settles at once.
            try await eventually { connection.status.activeStreams == 0 && connection.status.queuedRequests == 0 }
            let response = try await connection.send(HTTP2Request(method: "GET", path: "/authority"))
            #expect(response.headers["x-authority"] == "127.0.0.1:\(server.port)")
            await connection.close()
            #expect(connection.status.isClosed)
            let error = await expectError { try await connection.send(HTTP2Request(path: "/after-close")) }
            #expect((error as? HTTP2Error)?.isSafeToRetry == true)
        }
    }

    @Test("tasks preferring the event loop's executor run on its thread and send like any other")
    func eventLoopTaskExecutor() async throws {
        try await withServer(tls: try certificates.serverContext(), handler: Self.echo) { server in
            let configuration = clientConfiguration()
            let connection = try await connect(to: server, host: "127.0.0.1", configuration: configuration)
            let executor = EventLoopTaskExecutor(eventLoop: configuration.eventLoop)
            let onLoop = await withTaskExecutorPreference(executor) {
                await withTaskGroup(of: Bool.self) { group in
                    for _ in 0..<20 {
                        group.addTask { executor.eventLoop.inEventLoop }
                    }
                    return await group.reduce(executor.eventLoop.inEventLoop) { $0 && $1 }
                }
            }
            #expect(onLoop)
            #expect(!configuration.eventLoop.inEventLoop)
            try await withTaskExecutorPreference(executor) {
                try await runConcurrentEcho(connection: connection, count: 200)
            }
            await connection.close()
        }
    }

    @Test("an event loop's thread carries the loop's name, as top -H and perf show it")
    func eventLoopThreadName() async throws {
        let loop = EventLoop(name: "test-loop-name")
        defer { loop.shutdown() }
        let name = await withCheckedContinuation { (continuation: CheckedContinuation<String, Never>) in
            loop.execute {
                let name = try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)
                continuation.resume(returning: name ?? "")
            }
        }
        #expect(name == "test-loop-name\n")
    }

    @Test("cleartext prior-knowledge HTTP/2")
    func cleartext() async throws {
        try await withServer(tls: nil, handler: Self.echo) { server in
            let connection = try await HTTP2ClientConnection.connect(
                host: "localhost",
                port: server.port,
                tls: nil,
                configuration: clientConfiguration()
            )
            try await runConcurrentEcho(connection: connection, count: 200)
            await connection.close()
        }
    }

    @Test("bodies larger than the flow-control windows arrive intact in both directions")
    func largeBodies() async throws {
        var server = HTTP2Server.Configuration()
        server.maximumRequestBodySize = 8 << 20
        server.initialWindowSize = 65_535
        try await withServer(tls: try certificates.serverContext(), configuration: server, handler: Self.echo) {
            server in
            var configuration = clientConfiguration()
            configuration.initialStreamWindowSize = 65_535
            configuration.connectionWindowSize = 65_535
            let connection = try await connect(to: server, configuration: configuration)
            let sizes = [2 << 20, 300_000, 65_536 + 1, 1 << 20]
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (index, size) in sizes.enumerated() {
                    group.addTask {
                        let body = patternBytes(count: size, seed: index)
                        let response = try await connection.send(HTTP2Request(path: "/large/\(index)", body: body))
                        #expect(response.status == 200)
                        #expect(response.body.count == size)
                        #expect(response.body == body)
                    }
                }
                try await group.waitForAll()
            }
            await connection.close()
        }
    }

    @Test("a server that does not select h2 via ALPN is a clear error")
    func alpnMismatch() async throws {
        try await withServer(
            tls: try certificates.serverContext(applicationProtocols: ["http/1.1"]),
            handler: Self.echo
        ) {
            server in
            let error = await expectError {
                try await connect(to: server)
            }
            let http2Error = try #require(error as? HTTP2Error)
            #expect(http2Error.code == .connectFailed)
            #expect((http2Error.underlying as? TLSError)?.code == .applicationProtocolNotNegotiated)
            #expect(http2Error.message.contains("did not select h2 via ALPN"))
        }
    }

    @Test("an untrusted certificate fails; the extra CA file (added to the system roots) fixes it")
    func trust() async throws {
        try await withServer(tls: try certificates.serverContext(), handler: Self.echo) { server in
            let error = await expectError {
                try await HTTP2ClientConnection.connect(
                    host: "localhost",
                    port: server.port,
                    tls: try certificates.clientContext(trustTestCA: false),
                    configuration: clientConfiguration()
                )
            }
            let http2Error = try #require(error as? HTTP2Error)
            #expect((http2Error.underlying as? TLSError)?.code == .certificateVerificationFailed)
            #expect(http2Error.message.contains("certificate verification failed"))

            var trusting = TLSConfiguration.makeClient()
            trusting.additionalTrustRootsFile = certificates.caFile
            #expect(trusting.trustSystemRoots)
            let connection = try await HTTP2ClientConnection.connect(
                host: "localhost",
                port: server.port,
                tls: trusting,
                configuration: clientConfiguration()
            )
            let response = try await connection.send(HTTP2Request(path: "/trusted", body: [42]))
            #expect(response.body == [42])
            await connection.close()
        }
    }

    @Test("a certificate for another host name fails verification")
    func hostnameMismatch() async throws {
        try await withServer(tls: try certificates.serverContext(), handler: Self.echo) { server in
            let error = await expectError {
                try await HTTP2ClientConnection.connect(
                    host: "127.0.0.1",
                    port: server.port,
                    tls: try certificates.clientContext(serverNameOverride: "api.push.apple.com"),
                    configuration: clientConfiguration()
                )
            }
            let http2Error = try #require(error as? HTTP2Error)
            #expect((http2Error.underlying as? TLSError)?.code == .hostnameMismatch)
            #expect(http2Error.message.contains("not for this host"))
        }
    }

    @Test("client certificates: required by the server, presented by the client")
    func clientCertificate() async throws {
        var serverTLS = TLSConfiguration.makeServer(
            certificateChainPEM: certificates.serverChainPEM,
            privateKeyPEM: certificates.serverKeyPEM
        )
        serverTLS.certificateVerification = .full
        serverTLS.trustSystemRoots = false
        serverTLS.additionalTrustRootsFile = certificates.caFile
        try await withServer(tls: try TLSContext(configuration: serverTLS), handler: Self.echo) { server in
            var clientTLS = TLSConfiguration.makeClient()
            clientTLS.additionalTrustRootsFile = certificates.caFile
            clientTLS.certificateChainPEM = certificates.clientChainPEM
            clientTLS.privateKeyPEM = certificates.clientKeyPEM
            let connection = try await HTTP2ClientConnection.connect(
                host: "localhost",
                port: server.port,
                tls: clientTLS,
                configuration: clientConfiguration()
            )
            #expect(try await connection.send(HTTP2Request(path: "/mtls", body: [7])).body == [7])
            await connection.close()

            // Without a certificate the server rejects the handshake (TLS 1.3 reports it after
            // the client's handshake finished, so the failure may show up at connect or send).
            let error = await expectError {
                let connection = try await connect(to: server)
                return try await connection.send(HTTP2Request(path: "/no-cert"))
            }
            #expect(error is HTTP2Error)
        }
    }
}
