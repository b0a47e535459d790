import AsyncTestSupport
import Foundation
import HeraldCore
import Testing

@testable import HTTPRouting
@testable import HTTPServer

// Connections: slow, vanishing, kept alive, pipelined and many at once.
extension HTTPServerLiveTests {
    @Test("a stalled client does not block others and is closed after connectionTimeout")
    func slowClient() async throws {
        try await withServer(configure: { $0.connectionTimeout = .seconds(1) }, responder: makeTestRouter()) {
            server,
            port in
            let stalled = try await RawConnection.open(
                port: port,
                sending: "GET /items/1 HTTP/1.1\r\nHost: x\r\nX-Half: "
            )
            defer { stalled.close() }

            for index in 0..<3 {
                let response = try await RawConnection.request(port: port, "GET", "/items/\(index)")
                #expect(response.status == 200)
            }
            // The read times out after 10 s; the server closes after about 1 s.
            #expect(try await stalled.waitForClose())
            try await eventually("the stalled request to be released") { server.statistics.liveContexts == 0 }
        }
    }

    @Test("a client vanishing while its handler runs: no crash, no leak, server still answers")
    func abruptDisconnect() async throws {
        let gate = Gate()
        let started = Gate()
        try await withServer(responder: makeTestRouter(slowGate: gate, started: started)) { server, port in
            defer { gate.open() }
            let connection = try await RawConnection.open(port: port)
            try await connection.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
            try await withDeadline("the handler to start") { await started.wait() }
            connection.abort()
            gate.open()

            try await eventually("the request to be released") {
                server.statistics.liveContexts == 0 && server.statistics.inFlight == 0
            }
            let after = try await RawConnection.request(port: port, "GET", "/slow")
            #expect(after.status == 200)
            #expect(after.text == "slow done")
        }
    }

    @Test("keep-alive: two requests on one connection")
    func keepAlive() async throws {
        try await withServer(responder: makeTestRouter()) { _, port in
            let connection = try await RawConnection.open(port: port)
            defer { connection.close() }
            try await connection.send("GET /items/1 HTTP/1.1\r\nHost: x\r\n\r\n")
            let first = try await connection.readResponse()
            try await connection.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc")
            let second = try await connection.readResponse()
            #expect(first.status == 200)
            #expect(first.headers["Connection"]?.lowercased() != "close")
            #expect(second.status == 200)
            #expect(second.text == "abc")
        }
    }

    @Test("pipelined requests in one write are answered in order")
    func pipelining() async throws {
        try await withServer(responder: makeTestRouter()) { _, port in
            let connection = try await RawConnection.open(port: port)
            defer { connection.close() }
            try await connection.send(
                "GET /items/1 HTTP/1.1\r\nHost: x\r\n\r\n"
                    + "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\npong"
                    + "GET /items/3 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            )
            let first = try await connection.readResponse()
            let second = try await connection.readResponse()
            let third = try await connection.readResponse()
            #expect(try first.json()["id"] as? String == "1")
            #expect(second.text == "pong")
            #expect(try third.json()["id"] as? String == "3")
        }
    }

    @Test("large bodies pass through in both directions")
    func largeBodies() async throws {
        try await withServer(responder: makeTestRouter()) { _, port in
            let payload = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            let connection = try await RawConnection.open(port: port)
            defer { connection.close() }
            try await connection.send(
                Array("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: \(payload.count)\r\n\r\n".utf8) + payload
            )
            let response = try await connection.readResponse()
            #expect(response.status == 200)
            #expect(response.body == payload)
        }
    }

    @Test("many concurrent clients, some slow, are all answered")
    func concurrentClients() async throws {
        var router = makeTestRouter()
        router.get("/nap/{ms}") { request in
            // A deliberately slow handler: it sleeps as long as the path says.
            try await Task.sleep(for: .milliseconds(Int(request.parameters["ms"]!)!))
            return .text(request.parameters["ms"]!)
        }
        try await withServer(responder: router) { server, port in
            try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<40 {
                    group.addTask {
                        let delay = index % 4 == 0 ? 100 : 0
                        let response = try await RawConnection.request(port: port, "GET", "/nap/\(delay)")
                        return response.status == 200 && response.text == String(delay)
                    }
                }
                var answered = 0
                for try await ok in group where ok { answered += 1 }
                #expect(answered == 40)
            }
            try await eventually("every request to be released") { server.statistics.liveContexts == 0 }
        }
    }
}
