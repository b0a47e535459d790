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
    private func connect(
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

    @Test("SETTINGS_MAX_CONCURRENT_STREAMS is honoured as it changes: 1, then 100, then 1 again")
    func streamLimit() async throws {
        let meter = ConcurrencyMeter()
        var configuration = HTTP2Server.Configuration()
        configuration.maxConcurrentStreams = 1
        let handler: HTTP2Server.Handler = { request in
            if let limit = request.headers["x-set-limit"].flatMap(Int.init) {
                request.connection.setMaxConcurrentStreams(limit)
                return HTTP2ServerResponse(status: 200)
            }
            return await meter.measure {
                try? await Task.sleep(for: .milliseconds(15))
                return HTTP2ServerResponse(status: 200, body: request.body)
            }
        }
        try await withServer(tls: try certificates.serverContext(), configuration: configuration, handler: handler) {
            server in
            let connection = try await connect(to: server, host: "127.0.0.1")
            #expect(connection.status.maxConcurrentStreams == 1)

            func burst(_ count: Int) async throws -> Int {
                let peakQueued = Peak()
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for index in 0..<count {
                        group.addTask {
                            let body = Array("r\(index)".utf8)
                            let response = try await connection.send(HTTP2Request(path: "/work", body: body))
                            #expect(response.body == body)
                        }
                    }
                    group.addTask {
                        for _ in 0..<20 {
                            let status = connection.status
                            peakQueued.observe(status.queuedRequests)
                            try await Task.sleep(for: .milliseconds(5))
                        }
                    }
                    try await group.waitForAll()
                }
                return peakQueued.value
            }

            let queuedAtLimitOne = try await burst(8)
            #expect(meter.maximum == 1, "the client opened more than one stream while the server allowed one")
            #expect(queuedAtLimitOne > 0, "requests beyond the limit should wait in the client's queue")

            _ = try await connection.send(HTTP2Request(path: "/raise", headers: ["x-set-limit": "100"]))
            #expect(connection.status.maxConcurrentStreams == 100)
            meter.reset()
            _ = try await burst(40)
            #expect(meter.maximum > 1, "the client did not use the raised limit")
            #expect(meter.maximum <= 100)

            _ = try await connection.send(HTTP2Request(path: "/lower", headers: ["x-set-limit": "1"]))
            #expect(connection.status.maxConcurrentStreams == 1)
            meter.reset()
            _ = try await burst(6)
            #expect(meter.maximum == 1, "the client did not follow the lowered limit")
            await connection.close()
        }
    }

    @Test("GOAWAY mid-flight: streams above last-stream-id fail safe to retry, with the reason")
    func goAwayMidFlight() async throws {
        let metrics = MetricsRegistry()
        let handler: HTTP2Server.Handler = { request in
            if request.streamID == 11 {
                request.connection.goAway(lastStreamID: 5, debugData: #"{"reason":"Shutdown"}"#)
            }
            try? await Task.sleep(for: .milliseconds(300))
            return HTTP2ServerResponse(status: 200, headers: ["x-stream-id": String(request.streamID)])
        }
        try await withServer(tls: try certificates.serverContext(), handler: handler) { server in
            var configuration = clientConfiguration()
            configuration.metrics = metrics
            let connection = try await connect(to: server, configuration: configuration)
            let results = try await withThrowingTaskGroup(of: Result<HTTP2Response, any Error>.self) { group in
                for index in 0..<6 {
                    group.addTask {
                        do {
                            return .success(
                                try await connection.send(HTTP2Request(path: "/\(index)", body: [1, 2, 3]))
                            )
                        } catch {
                            return .failure(error)
                        }
                    }
                }
                var results: [Result<HTTP2Response, any Error>] = []
                for try await result in group { results.append(result) }
                return results
            }
            let answered = results.compactMap { try? $0.get().headers["x-stream-id"] }.sorted()
            #expect(answered == ["1", "3", "5"])
            let errors = results.compactMap { result -> HTTP2Error? in
                if case .failure(let error) = result { return error as? HTTP2Error }
                return nil
            }
            #expect(errors.count == 3)
            for error in errors {
                #expect(error.code == .goAway)
                #expect(error.isSafeToRetry)
                #expect(error.goAwayReason == "Shutdown")
                #expect(error.goAway?.lastStreamID == 5)
            }
            let status = connection.status
            #expect(!status.isUsable)
            #expect(status.goAway?.reason == "Shutdown")
            let late = await expectError { try await connection.send(HTTP2Request(path: "/late")) }
            #expect((late as? HTTP2Error)?.isSafeToRetry == true)
            try await eventually { connection.status.isClosed }
            #expect(metrics.value("herald_http2_client_goaways_total", labels: [("error_code", "NO_ERROR")]) == 1)
        }
    }

    @Test("a GOAWAY with a reason is not replaced by the server's plain one at graceful shutdown")
    func goAwayReasonSurvivesShutdown() async throws {
        let metrics = MetricsRegistry()
        let release = AsyncStream<Void>.makeStream()
        let handler: HTTP2Server.Handler = { request in
            request.connection.goAway(debugData: #"{"reason":"Shutdown"}"#)
            for await _ in release.stream {}
            return HTTP2ServerResponse(status: 200)
        }
        try await withServer(tls: try certificates.serverContext(), handler: handler) { server in
            var configuration = clientConfiguration()
            configuration.metrics = metrics
            let connection = try await connect(to: server, configuration: configuration)
            async let response = connection.send(HTTP2Request(path: "/held"))
            try await eventually { connection.status.goAway != nil }
            // The stream is still open: the server's own GOAWAY would reach the client first.
            server.triggerGracefulShutdown()
            try await Task.sleep(for: .milliseconds(100))
            release.continuation.finish()
            #expect(try await response.status == 200)
            #expect(connection.status.goAway?.reason == "Shutdown")
            #expect(metrics.value("herald_http2_client_goaways_total", labels: [("error_code", "NO_ERROR")]) == 1)
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

    @Test("an abrupt server close fails in-flight requests promptly")
    func abruptClose() async throws {
        let started = Recorder<Int>()
        let handler: HTTP2Server.Handler = { request in
            started.append(request.streamID)
            if request.path == "/close" {
                request.connection.closeAbruptly()
            }
            try? await Task.sleep(for: .seconds(10))
            return HTTP2ServerResponse(status: 200)
        }
        try await withServer(tls: try certificates.serverContext(), handler: handler) { server in
            let connection = try await connect(
                to: server,
                configuration: clientConfiguration(requestTimeout: .seconds(30))
            )
            let errors = try await withThrowingTaskGroup(of: (any Error)?.self) { group in
                for index in 0..<5 {
                    group.addTask {
                        do {
                            _ = try await connection.send(HTTP2Request(path: "/slow/\(index)", body: [1]))
                            return nil
                        } catch {
                            return error
                        }
                    }
                }
                group.addTask {
                    try await eventually { started.all.count == 5 }
                    do {
                        _ = try await connection.send(HTTP2Request(path: "/close"))
                        return nil
                    } catch {
                        return error
                    }
                }
                var errors: [any Error] = []
                for try await error in group { if let error { errors.append(error) } }
                return errors
            }
            #expect(errors.count == 6)
            for error in errors {
                let http2Error = error as? HTTP2Error
                #expect(http2Error?.code == .connectionClosed)
                #expect(http2Error?.isSafeToRetry == false, "these requests had been sent")
            }
            #expect(connection.status.isClosed)
            #expect(!connection.status.isUsable)
        }
    }

    /// Waits (up to 3 s) for the client to reset the stream and records the code.
    static func waitForReset(_ request: HTTP2ServerRequest, into resets: Recorder<HTTP2ErrorCode>) async {
        for _ in 0..<300 {
            if let code = request.resetCode {
                resets.append(code)
                break
            }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    @Test("a per-request timeout fails the request and resets its stream; the connection stays usable")
    func requestTimeout() async throws {
        let resets = Recorder<HTTP2ErrorCode>()
        let handler: HTTP2Server.Handler = { request in
            if request.path == "/slow" { await Self.waitForReset(request, into: resets) }
            return HTTP2ServerResponse(status: 200, body: request.body)
        }
        try await withServer(tls: try certificates.serverContext(), handler: handler) { server in
            let connection = try await connect(
                to: server,
                configuration: clientConfiguration(requestTimeout: .seconds(20))
            )
            let error = await expectError {
                try await connection.send(HTTP2Request(path: "/slow", body: [1], timeout: .milliseconds(200)))
            }
            let http2Error = try #require(error as? HTTP2Error)
            #expect(http2Error.code == .requestTimeout)
            #expect(!http2Error.isSafeToRetry)
            try await eventually { resets.all == [.cancel] }
            #expect(connection.status.isUsable)
            #expect(try await connection.send(HTTP2Request(path: "/fast", body: [9])).body == [9])
            await connection.close()
        }
    }

    @Test("cancelling the task resets the stream and throws CancellationError")
    func cancellation() async throws {
        let resets = Recorder<HTTP2ErrorCode>()
        let started = Recorder<Int>()
        let handler: HTTP2Server.Handler = { request in
            started.append(request.streamID)
            await Self.waitForReset(request, into: resets)
            return HTTP2ServerResponse(status: 200)
        }
        try await withServer(tls: try certificates.serverContext(), handler: handler) { server in
            let connection = try await connect(to: server)
            let task = Task { try await connection.send(HTTP2Request(path: "/cancel-me", body: [1])) }
            try await eventually { started.all.count == 1 }
            task.cancel()
            let result = await task.result
            #expect(throws: CancellationError.self) { try result.get() }
            try await eventually { resets.all == [.cancel] }
            try await eventually { connection.status.activeStreams == 0 }
            #expect(connection.status.isUsable)
            await connection.close()
        }
    }

    /// Hands `path` over with the completion-handler `submit`, recording the outcome.
    private static func submit(
        _ path: String,
        body: [UInt8],
        on connection: HTTP2ClientConnection,
        into outcomes: Recorder<(path: String, result: Result<[UInt8], HTTP2Error>)>
    ) {
        connection.submit(
            method: "POST",
            fieldCount: 1,
            byteCount: ":path".utf8.count + path.utf8.count,
            body: body,
            writeFields: { writer in
                writer.append(name: ":path", value: path)
            },
            completion: { result in
                switch result {
                case .success(let response): outcomes.append((path, .success(response.body)))
                case .failure(let error as HTTP2Error): outcomes.append((path, .failure(error)))
                case .failure(let error): Issue.record("unexpected error \(error)")
                }
            }
        )
    }

    @Test("a burst of submitted requests leaves per 1 ms coalescing window, each with its own answer")
    func burstOfSubmittedRequestsWithAWindow() async throws {
        try await withServer(tls: try certificates.serverContext(), handler: Self.echo) { server in
            let connection = try await connect(
                to: server,
                host: "127.0.0.1",
                configuration: clientConfiguration(coalescingWindow: .milliseconds(1))
            )
            let outcomes = Recorder<(path: String, result: Result<[UInt8], HTTP2Error>)>()
            let count = 2000
            for index in 0..<count {
                Self.submit("/burst/\(index)", body: Array("body-\(index)".utf8), on: connection, into: outcomes)
                if index % 100 == 99 { try await Task.sleep(for: .microseconds(300)) }
            }
            try await eventually(timeout: .seconds(30)) { outcomes.all.count == count }
            for (path, result) in outcomes.all {
                let index = path.split(separator: "/").last.map(String.init) ?? ""
                #expect((try? result.get()) == Array("body-\(index)".utf8), "\(path)")
            }
            #expect(Set(outcomes.all.map(\.path)).count == count)
            await connection.close()
        }
    }

    @Test("submitted requests wait for the coalescing window; an awaited send does not, and takes them along")
    func coalescingWindowHoldsSubmittedRequests() async throws {
        let paths = Recorder<String>()
        let handler: HTTP2Server.Handler = { request in
            paths.append(request.path)
            return HTTP2ServerResponse(status: 200, body: request.body)
        }
        try await withServer(tls: try certificates.serverContext(), handler: handler) { server in
            // Far longer than the suite's time limit: only the awaited send can end the wait.
            let connection = try await connect(
                to: server,
                configuration: clientConfiguration(coalescingWindow: .seconds(600))
            )
            let outcomes = Recorder<(path: String, result: Result<[UInt8], HTTP2Error>)>()
            // The first request of a quiet connection leaves at once; its drain arms the window.
            Self.submit("/first", body: [1], on: connection, into: outcomes)
            try await eventually { outcomes.all.count == 1 }
            Self.submit("/held", body: [2], on: connection, into: outcomes)
            try await Task.sleep(for: .milliseconds(200))
            #expect(paths.all == ["/first"], "the second request waits for the window")
            #expect(try await connection.send(HTTP2Request(path: "/awaited", body: [3])).body == [3])
            try await eventually { outcomes.all.count == 2 }
            // The server runs each stream's handler in a task of its own, so the two that left
            // together may be handled in either order (seen swapped under AddressSanitizer).
            #expect(paths.all.first == "/first" && Set(paths.all.dropFirst()) == ["/held", "/awaited"])
            #expect(paths.all.count == 3)
            #expect(outcomes.all.map(\.path) == ["/first", "/held"])
            for outcome in outcomes.all { #expect((try? outcome.result.get()) != nil) }
            await connection.close()
        }
    }

    @Test(
        "requests waiting for the coalescing window fail at once, safe to retry, on GOAWAY or a failed connection",
        arguments: ["goaway", "abort"]
    )
    func requestsWaitingForTheWindowFailPromptly(ending: String) async throws {
        let closeNow = Recorder<Bool>()
        let paths = Recorder<String>()
        let handler: HTTP2Server.Handler = { request in
            paths.append(request.path)
            for _ in 0..<3000 where closeNow.all.isEmpty { try? await Task.sleep(for: .milliseconds(10)) }
            if ending == "goaway" {
                request.connection.goAway(lastStreamID: 1, debugData: #"{"reason":"Shutdown"}"#)
            } else {
                request.connection.closeAbruptly()
            }
            return HTTP2ServerResponse(status: 200, body: request.body)
        }
        try await withServer(tls: try certificates.serverContext(), handler: handler) { server in
            // Far longer than the suite's time limit: only GOAWAY or the failure can end the wait.
            let connection = try await connect(
                to: server,
                configuration: clientConfiguration(coalescingWindow: .seconds(600))
            )
            let outcomes = Recorder<(path: String, result: Result<[UInt8], HTTP2Error>)>()
            Self.submit("/first", body: [1], on: connection, into: outcomes)
            try await eventually { paths.all == ["/first"] }
            Self.submit("/waiting", body: [2], on: connection, into: outcomes)
            closeNow.append(true)
            try await eventually { outcomes.all.count == 2 }
            let waiting = try #require(outcomes.all.first { $0.path == "/waiting" })
            guard case .failure(let error) = waiting.result else {
                Issue.record("the waiting request succeeded")
                return
            }
            #expect(error.isSafeToRetry, "it never left")
            #expect(paths.all == ["/first"])
            let first = try #require(outcomes.all.first { $0.path == "/first" })
            if ending == "goaway" {
                #expect((try? first.result.get()) == [1], "stream 1 was below the GOAWAY's last stream id")
            } else {
                guard case .failure(let firstError) = first.result else {
                    Issue.record("the first request succeeded on an aborted connection")
                    return
                }
                #expect(!firstError.isSafeToRetry, "it had been sent")
            }
            await connection.close()
        }
    }

    @Test("PINGs keep an idle connection alive past the server's idle timeout")
    func pingKeepsAlive() async throws {
        // Their own loop: throughput tests running meanwhile can keep the shared loop busy for
        // longer than the idle timeout, and late PINGs would make the pinging connection idle.
        let loop = EventLoop(name: "ping-keeps-alive")
        defer { loop.shutdown() }
        let connections = Recorder<HTTP2ServerConnection>()
        var configuration = HTTP2Server.Configuration()
        configuration.idleTimeout = .milliseconds(600)
        configuration.eventLoop = loop
        configuration.onConnection = { connections.append($0) }
        try await withServer(tls: try certificates.serverContext(), configuration: configuration, handler: Self.echo) {
            server in
            var pinging = clientConfiguration()
            pinging.pingInterval = .milliseconds(150)
            pinging.pingTimeout = .seconds(2)
            pinging.eventLoop = loop
            var quiet = clientConfiguration()
            quiet.eventLoop = loop
            let alive = try await connect(to: server, configuration: pinging)
            let silent = try await connect(to: server, configuration: quiet)
            try await eventually("the server's idle timeout to close the connection without PINGs") {
                silent.status.isClosed
            }
            // The pinging connection has by now been without requests at least as long.
            #expect(alive.status.isUsable)
            #expect(try await alive.send(HTTP2Request(path: "/still-there", body: [5])).body == [5])
            try await eventually { connections.all.contains { $0.pingsReceived >= 3 } }
            await alive.close()
        }
    }

    @Test("a server that stops answering PINGs fails the connection within the ping timeout")
    func pingTimeout() async throws {
        let loop = EventLoop(name: "ping-timeout")
        defer { loop.shutdown() }
        var configuration = HTTP2Server.Configuration()
        configuration.answersPings = false
        configuration.eventLoop = loop
        try await withServer(tls: try certificates.serverContext(), configuration: configuration, handler: Self.echo) {
            server in
            var client = clientConfiguration()
            client.pingInterval = .milliseconds(100)
            client.pingTimeout = .milliseconds(300)
            client.eventLoop = loop
            let connection = try await connect(to: server, configuration: client)
            try await eventually(timeout: .seconds(3)) { connection.status.isClosed }
            #expect(connection.status.failure?.code == .pingTimeout)
            let error = await expectError { try await connection.send(HTTP2Request(path: "/dead")) }
            #expect((error as? HTTP2Error)?.code == .pingTimeout)
        }
    }

    @Test("graceful server shutdown: run() returns after GOAWAY once streams are answered")
    func gracefulServerShutdown() async throws {
        let server = try HTTP2Server(configuration: .init(), tls: try certificates.serverContext()) { request in
            try? await Task.sleep(for: .milliseconds(200))
            return HTTP2ServerResponse(status: 204)
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run() }
            let connection = try await connect(to: server)
            async let inFlight = connection.send(HTTP2Request(path: "/in-flight"))
            try await eventually { connection.status.activeStreams == 1 }
            server.triggerGracefulShutdown()
            #expect(try await inFlight.status == 204)
            try await group.next()  // run() returned
            try await eventually { connection.status.isClosed }
            #expect(connection.status.goAway?.errorCode == .noError)
        }
    }
}
