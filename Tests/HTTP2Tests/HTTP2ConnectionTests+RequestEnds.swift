import AsyncTestSupport
import Foundation
import HTTP2
import HeraldCore
import HeraldIO
import Synchronization
import Testing

/// Requests that end without a response: the server closes, the request times out, the task is
/// cancelled.
extension HTTP2ConnectionTests {
    @Test("an abrupt server close fails in-flight requests promptly")
    func abruptClose() async throws {
        let started = Recorder<Int>()
        // The handlers never answer: they wait until the test is over (or the server stops).
        let testOver = Latch()
        let handler: HTTP2Server.Handler = { request in
            started.append(request.streamID)
            if request.path == "/close" {
                request.connection.closeAbruptly()
            }
            try? await testOver.wait()
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
            testOver.open()
        }
    }

    /// Waits for the client to reset the stream and records the code (the test that awaits the
    /// record fails if it never comes).
    static func waitForReset(_ request: HTTP2ServerRequest, into resets: Recorder<HTTP2ErrorCode>) async {
        try? await eventually("the client to reset the stream") { request.resetCode != nil }
        if let code = request.resetCode { resets.append(code) }
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
}
