import AsyncTestSupport
import Foundation
import HTTP2
import HeraldCore
import HeraldIO
import Synchronization
import Testing

/// The coalescing window: requests handed over with `submit` wait for it and leave together.
extension HTTP2ConnectionTests {
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
            // Batches of 100: the first request of each drains at once and arms the window, the
            // rest wait for it; the next batch starts once this one is answered.
            for index in 0..<count {
                Self.submit("/burst/\(index)", body: Array("body-\(index)".utf8), on: connection, into: outcomes)
                if index % 100 == 99 {
                    try await eventually("the answers to the first \(index + 1) requests") {
                        outcomes.all.count == index + 1
                    }
                }
            }
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
            let configuration = clientConfiguration(coalescingWindow: .seconds(600))
            let connection = try await connect(to: server, configuration: configuration)
            let outcomes = Recorder<(path: String, result: Result<[UInt8], HTTP2Error>)>()
            // The first request of a quiet connection leaves at once; its drain arms the window.
            Self.submit("/first", body: [1], on: connection, into: outcomes)
            try await eventually { outcomes.all.count == 1 }
            Self.submit("/held", body: [2], on: connection, into: outcomes)
            // Had the submission queued a drain, the loop would run it before this round trip,
            // and the drain would open the request's stream.
            await configuration.eventLoop.roundTrip()
            #expect(connection.status.activeStreams == 0 && connection.status.queuedRequests == 0)
            #expect(outcomes.all.count == 1, "the second request waits for the window")
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
        let closeNow = Latch()
        let paths = Recorder<String>()
        let handler: HTTP2Server.Handler = { request in
            paths.append(request.path)
            try? await closeNow.wait()
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
            closeNow.open()
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
}
