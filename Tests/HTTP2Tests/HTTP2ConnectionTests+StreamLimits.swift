import AsyncTestSupport
import Foundation
import HTTP2
import HeraldCore
import HeraldIO
import Synchronization
import Testing

/// The peer's stream limit as it changes, GOAWAY, and the server shutting down gracefully.
extension HTTP2ConnectionTests {
    @Test("SETTINGS_MAX_CONCURRENT_STREAMS is honoured as it changes: 1, then 100, then 1 again")
    func streamLimit() async throws {
        let meter = ConcurrencyMeter()
        // Each burst's handlers hold their streams until the burst's gate opens.
        let gate = SharedValue(Latch())
        var configuration = HTTP2Server.Configuration()
        configuration.maxConcurrentStreams = 1
        let handler: HTTP2Server.Handler = { request in
            if let limit = request.headers["x-set-limit"].flatMap(Int.init) {
                request.connection.setMaxConcurrentStreams(limit)
                return HTTP2ServerResponse(status: 200)
            }
            let held = gate.current
            return await meter.measure {
                try? await held.wait()
                return HTTP2ServerResponse(status: 200, body: request.body)
            }
        }
        try await withServer(tls: try certificates.serverContext(), configuration: configuration, handler: handler) {
            server in
            let connection = try await connect(to: server, host: "127.0.0.1")
            #expect(connection.status.maxConcurrentStreams == 1)

            /// Sends `count` requests whose handlers wait until `held` holds, then lets them answer.
            func burst(_ count: Int, _ what: Comment, heldUntil held: @escaping @Sendable () -> Bool) async throws {
                let latch = Latch()
                gate.current = latch
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for index in 0..<count {
                        group.addTask {
                            let body = Array("r\(index)".utf8)
                            let response = try await connection.send(HTTP2Request(path: "/work", body: body))
                            #expect(response.body == body)
                        }
                    }
                    try await eventually(what) { held() }
                    latch.open()
                    try await group.waitForAll()
                }
            }

            try await burst(8, "one stream open and the other seven queued in the client") {
                meter.current == 1 && connection.status.queuedRequests == 7
            }
            #expect(meter.maximum == 1, "the client opened more than one stream while the server allowed one")

            _ = try await connection.send(HTTP2Request(path: "/raise", headers: ["x-set-limit": "100"]))
            #expect(connection.status.maxConcurrentStreams == 100)
            meter.reset()
            try await burst(40, "all 40 streams open at once under the raised limit") { meter.current == 40 }
            #expect(meter.maximum == 40)

            _ = try await connection.send(HTTP2Request(path: "/lower", headers: ["x-set-limit": "1"]))
            #expect(connection.status.maxConcurrentStreams == 1)
            meter.reset()
            try await burst(6, "one stream open and the other five queued in the client") {
                meter.current == 1 && connection.status.queuedRequests == 5
            }
            #expect(meter.maximum == 1, "the client did not follow the lowered limit")
            await connection.close()
        }
    }

    @Test("GOAWAY mid-flight: streams above last-stream-id fail safe to retry, with the reason")
    func goAwayMidFlight() async throws {
        let metrics = MetricsRegistry()
        // Every stream waits for the sixth (id 11), which sends the GOAWAY: all six are open then.
        let sixthArrived = Latch()
        let handler: HTTP2Server.Handler = { request in
            if request.streamID == 11 {
                request.connection.goAway(lastStreamID: 5, debugData: #"{"reason":"Shutdown"}"#)
                sixthArrived.open()
            }
            try? await sixthArrived.wait()
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
            // The shutdown runs on the server's loop (it writes any GOAWAY of its own there, ahead
            // of the response): once the loop has run it, the response may go.
            await EventLoop.shared.roundTrip()
            release.continuation.finish()
            #expect(try await response.status == 200)
            #expect(connection.status.goAway?.reason == "Shutdown")
            #expect(metrics.value("herald_http2_client_goaways_total", labels: [("error_code", "NO_ERROR")]) == 1)
        }
    }

    @Test("graceful server shutdown: run() returns after GOAWAY once streams are answered")
    func gracefulServerShutdown() async throws {
        let release = Latch()
        let server = try HTTP2Server(configuration: .init(), tls: try certificates.serverContext()) { request in
            try? await release.wait()
            return HTTP2ServerResponse(status: 204)
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run() }
            let connection = try await connect(to: server)
            async let inFlight = connection.send(HTTP2Request(path: "/in-flight"))
            try await eventually { connection.status.activeStreams == 1 }
            server.triggerGracefulShutdown()
            try await eventually("the server's GOAWAY") { connection.status.goAway != nil }
            release.open()
            #expect(try await inFlight.status == 204)
            try await group.next()  // run() returned
            try await eventually { connection.status.isClosed }
            #expect(connection.status.goAway?.errorCode == .noError)
        }
    }
}
