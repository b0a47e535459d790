import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Numbers and strings at their extremes sent to a real `herald serve`: each is answered with a
/// 4xx naming the field, and the process keeps serving (issue 18: no trap reachable from input).
@Suite("herald serve: inputs at their extremes")
struct ServeInputExtremesTests {
    static let key = "extremes-test-key-0123456789"
    static let token = String(repeating: "ab", count: 32)

    /// A `herald serve --simulator` on a fresh SQLite file; `body` gets its base URL.
    func withHerald(_ body: (String) async throws -> Void) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-extremes-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let herald = try HeraldProcess(
            arguments: ["serve", "--simulator", "--host", "127.0.0.1", "--port", "0"],
            environment: [
                "DATABASE_URL": "sqlite:\(directory.path)/herald.sqlite", "TOPIC": "org.example.extremes",
                "HERALD_API_KEYS": Self.key,
            ]
        )
        let base = "http://127.0.0.1:\(try await herald.listeningPort())"
        try await body(base)
        #expect(herald.isRunning, "herald died; its log:\n\(herald.log)")
        #expect(try await fetch("\(base)/healthz").status == 200)
        herald.signal(SIGTERM)
        #expect(try await herald.waitForExit(timeout: .seconds(10)) == 0, "log:\n\(herald.log)")
    }

    /// One authorized request; returns status and body.
    func send(_ url: String, method: String = "GET", body: [UInt8]? = nil) async throws -> (status: Int, body: String) {
        var request = URLRequest(url: URL(string: url)!)
        request.httpMethod = method
        request.setValue("Bearer \(Self.key)", forHTTPHeaderField: "Authorization")
        if let body {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = Data(body)
        }
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
    }

    @Test("the two requests that killed the process on main are 400s naming the field")
    func crashingRequestsAreRefused() async throws {
        try await withHerald { base in
            let since = try await send("\(base)/v1/dead-tokens?since=10000000000000000")
            #expect(since.status == 400)
            #expect(since.body.contains(#""field":"since""#), "\(since.body)")
            let body =
                #"{"tokens":["\#(Self.token)"],"payload":{"aps":{"alert":"Hi"}},"expiration":9223372036854775807}"#
            let created = try await send("\(base)/v1/notifications", method: "POST", body: Array(body.utf8))
            #expect(created.status == 400)
            #expect(created.body.contains(#""field":"expiration""#), "\(created.body)")
        }
    }

    /// The extremes every field gets, as raw JSON value bytes.
    static let extremes: [(name: String, json: [UInt8])] = [
        ("Int64.max", Array("9223372036854775807".utf8)),
        ("-Int64.max", Array("-9223372036854775807".utf8)),
        ("1e308", Array("1e308".utf8)),
        ("-0", Array("-0".utf8)),
        ("a 1 MiB string", Array("\"\(String(repeating: "a", count: 1 << 20))\"".utf8)),
        ("40 nested arrays", Array((String(repeating: "[", count: 40) + String(repeating: "]", count: 40)).utf8)),
        ("invalid UTF-8", [UInt8(ascii: "\""), 0x61, 0xFF, 0xFE, 0x62, UInt8(ascii: "\"")]),
    ]

    /// Where today's answer is not a 400 naming the field, and why that is right.
    static let notificationExceptions: [String: Int] = [
        // `-0` is the number 0: "try once and do not store".
        "expiration/-0": 202
    ]

    @Test("every POST /v1/notifications field and GET /v1/dead-tokens parameter at its extremes")
    func fieldExtremes() async throws {
        try await withHerald { base in
            let fields = [
                "app", "environment", "tokens", "push_type", "priority", "expiration", "collapse_id", "topic",
                "payload", "send_at",
            ]
            for field in fields {
                for extreme in Self.extremes {
                    let base64 = #"{"tokens":["\#(Self.token)"],"payload":{"aps":{"alert":"Hi"}}"#
                    let body = Array(base64.utf8) + Array(#","\#(field)":"#.utf8) + extreme.json + [UInt8(ascii: "}")]
                    // tokens and payload are given twice here: refused as duplicate keys, naming them.
                    let answer = try await send("\(base)/v1/notifications", method: "POST", body: body)
                    let expected = Self.notificationExceptions["\(field)/\(extreme.name)"] ?? 400
                    #expect(answer.status == expected, "\(field) = \(extreme.name): \(answer.body.prefix(300))")
                    if expected == 400 {
                        #expect(
                            answer.body.contains(#""field":"\#(field)""#),
                            "\(field) = \(extreme.name): \(answer.body.prefix(300))"
                        )
                    }
                }
            }
            // Sizes: 413, naming the field.
            let hugeAlert =
                #"{"tokens":["\#(Self.token)"],"payload":{"aps":{"alert":"\#(String(repeating: "x", count: 1 << 20))"}}}"#
            let payload = try await send("\(base)/v1/notifications", method: "POST", body: Array(hugeAlert.utf8))
            #expect(payload.status == 413 && payload.body.contains(#""field":"payload""#), "\(payload.body)")
            let many = (0...10_000).map { String(format: "%064x", $0) }
            let manyTokens = #"{"tokens":["\#(many.joined(separator: "\",\""))"],"payload":{"aps":{}}}"#
            let tokens = try await send("\(base)/v1/notifications", method: "POST", body: Array(manyTokens.utf8))
            #expect(tokens.status == 413 && tokens.body.contains(#""field":"tokens""#), "\(tokens.body)")

            // Query parameters, percent-encoded.
            let queryExtremes: [(name: String, text: String)] = [
                ("Int64.max", "9223372036854775807"), ("-Int64.max", "-9223372036854775807"), ("1e308", "1e308"),
                ("-0", "-0"), ("10^16", "10000000000000000"), ("a 4 KiB string", String(repeating: "a", count: 4096)),
                ("nesting", "%5B%5B%5B%5B%5D%5D%5D%5D"), ("invalid UTF-8", "a%FF%FEb"),
            ]
            // GET /v1/notifications/{id}: limit is range-checked; a cursor is an integer ordinal, so
            // integral extremes are valid cursors and the unknown id answers 404.
            let unknown = "/v1/notifications/3f0c2a1e-5b6d-4c7e-8f90-a1b2c3d4e5f6"
            for parameter in ["limit", "cursor"] {
                for extreme in queryExtremes {
                    let answer = try await send("\(base)\(unknown)?\(parameter)=\(extreme.text)")
                    let integral = Int(extreme.text) != nil
                    let expected = parameter == "cursor" && integral ? 404 : 400
                    #expect(answer.status == expected, "\(parameter) = \(extreme.name): \(answer.body.prefix(300))")
                    if expected == 400 {
                        #expect(answer.body.contains(#""field":"\#(parameter)""#), "\(answer.body.prefix(300))")
                    }
                }
            }

            // `since=-0` is the Unix second 0, a valid start.
            let queryExceptions: [String: Int] = ["since/-0": 200]
            for parameter in ["since", "limit", "cursor", "environment", "app"] {
                for extreme in queryExtremes {
                    let answer = try await send("\(base)/v1/dead-tokens?\(parameter)=\(extreme.text)")
                    let expected = queryExceptions["\(parameter)/\(extreme.name)"] ?? 400
                    if parameter == "app" && extreme.name != "a 4 KiB string" {
                        // Any other app name is a filter that matches nothing: an empty page.
                        #expect(answer.status == 200, "app = \(extreme.name): \(answer.body.prefix(300))")
                        continue
                    }
                    #expect(answer.status == expected, "\(parameter) = \(extreme.name): \(answer.body.prefix(300))")
                    if expected == 400 {
                        #expect(
                            answer.body.contains(#""field":"\#(parameter)""#),
                            "\(parameter) = \(extreme.name): \(answer.body.prefix(300))"
                        )
                    }
                }
            }
        }
    }
}
