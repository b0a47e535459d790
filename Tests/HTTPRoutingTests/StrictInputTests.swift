import HeraldCore
import Synchronization
import Testing

@testable import HTTPRouting

/// ``JSONValue`` parsing (strict JSON with positions), the request checks `/v1` makes, and the error
/// code in the access log.
@Suite("Strict input")
struct StrictInputTests {
    static func fault(_ text: String, depth: Int = 512) -> JSONFault? {
        JSONValue.check(Array(text.utf8), maximumDepth: depth)
    }

    @Test("strict JSON is accepted as it is")
    func accepts() {
        let valid = [
            #"{}"#, #"[]"#, #" {"a": [1, -0, 0.5, 1e10, -2.5E-3, true, false, null, "x\n\u00e9\"\\\/"]} "#,
            #""text""#, "42", #"{"a": {"a": {"a": 1}}, "b": [{"a": 1}, {"a": 2}]}"#,
            "{\"caf\u{e9}\": \"\u{1F600}\"}",
        ]
        for text in valid { #expect(Self.fault(text) == nil, "\(text): \(Self.fault(text)?.description ?? "")") }
        // Bytes that are not UTF-8 inside a string are left to the decoder to name.
        #expect(JSONValue.check([0x22, 0x61, 0xFF, 0x22]) == nil)
    }

    @Test("each fault has its line, column, path and what to fix")
    func faults() throws {
        let cases: [(text: String, kind: JSONFault.Kind, line: Int, column: Int, path: String?, says: String)] =
            [
                ("[1, 2,]", .syntax, 1, 6, "[1]", "trailing comma before ]"),
                ("{\n  \"a\": 1,\n}", .syntax, 2, 9, "a", "trailing comma before }"),
                (#"{"a": 1, "a": 2}"#, .duplicateKey, 1, 10, "a", "appears twice"),
                (#"{"x": {"a": 1, "\u0061": 2}}"#, .duplicateKey, 1, 16, "x.a", "appears twice"),
                ("{'a': 1}", .syntax, 1, 2, nil, "expected a key in double quotes"),
                ("[1] [2]", .syntax, 1, 5, nil, "more text after"),
                ("{\"a\": 01}", .syntax, 1, 8, "a", "leading zeros"),
                ("// note\n{}", .syntax, 1, 1, nil, "comments"),
                ("{\"a\": tru}", .syntax, 1, 10, "a", "literal true"),
                ("[\"a\tb\"]", .syntax, 1, 4, "[0]", "control character"),
                ("{\"a\": \"\\x\"}", .syntax, 1, 9, "a", "not a JSON escape"),
                ("{\"a\": [1, 2", .syntax, 1, 12, "a[1]", "ends inside an array"),
                ("", .syntax, 1, 1, nil, "found the end"),
                ("{\"é\": 1 2}", .syntax, 1, 9, "é", "expected , or }"),
                ("\u{FEFF}{\"bom\": 1}", .syntax, 1, 1, nil, "byte order mark"),
                ("{\"n\": [1, 1e400]}", .syntax, 1, 11, "n[1]", "beyond the range of a double"),
            ]
        for item in cases {
            let fault = try #require(Self.fault(item.text), "accepted: \(item.text)")
            #expect(fault.kind == item.kind, "\(item.text)")
            #expect(fault.line == item.line && fault.column == item.column, "\(item.text): \(fault)")
            #expect(fault.pathText == item.path, "\(item.text): \(fault.path)")
            #expect(fault.message.contains(item.says), "\(item.text): \(fault.message)")
        }
    }

    @Test("depth is limited without recursion: a million brackets are a fault, not a crash")
    func depth() throws {
        #expect(Self.fault("[[[1]]]", depth: 3) == nil)
        let deep = try #require(Self.fault(#"{"a": [[[1]]]}"#, depth: 3))
        #expect(deep.kind == .tooDeep)
        #expect(deep.path.first == .key("a"))
        let huge = String(repeating: "[", count: 1_000_000)
        #expect(Self.fault(huge)?.kind == .tooDeep)
    }

    @Test("a body needs application/json, with at most a UTF-8 charset; no body needs nothing")
    func contentType() throws {
        func check(_ contentType: String?, body: String = "{}") -> HTTPError? {
            var headers = HTTPHeaders()
            if let contentType { headers.replaceOrAdd(name: "Content-Type", value: contentType) }
            let request = HTTPRequest(method: "POST", path: "/v1/x", headers: headers, body: Array(body.utf8))
            do {
                try request.requireJSONContentType()
                return nil
            } catch {
                return error
            }
        }
        for accepted in ["application/json", "APPLICATION/JSON ; Charset=UTF-8", "application/json;charset=\"utf8\""] {
            #expect(check(accepted) == nil, "\(accepted)")
        }
        #expect(check(nil, body: "") == nil)
        for refused in [
            nil, "text/plain", "application/json; charset=utf-16", "application/jsonx", "application/json; v=1",
        ] {
            let error = try #require(check(refused), "\(refused ?? "none")")
            #expect(error.status == 415)
            #expect(error.code == "unsupported_media_type")
            #expect(error.message.contains("Content-Type: application/json"))
        }
        #expect(check("text/plain\u{7}")?.message.contains("text/plain?") == true, "control characters are not echoed")
    }

    @Test("an unknown query parameter is a 400 naming it and listing the known ones")
    func queryParameters() throws {
        let request = HTTPRequest(method: "GET", path: "/v1/x?limit=1&dry_run=true")
        try request.rejectUnknownQueryParameters(["limit", "dry_run"], route: "GET /v1/x")
        do {
            try request.rejectUnknownQueryParameters(["limit", "cursor"], route: "GET /v1/x")
            Issue.record("accepted dry_run")
        } catch {
            #expect(error.status == 400)
            #expect(error.code == "unknown_parameter")
            #expect(error.field == "dry_run")
            #expect(error.message.contains("GET /v1/x are limit, cursor"))
        }
        do {
            try request.rejectUnknownQueryParameters([], route: "DELETE /v1/x")
            Issue.record("accepted a query")
        } catch {
            #expect(error.message.contains("takes no query parameters"))
        }
    }

    @Test("every list's limit: 100 when absent, 1 to 1,000, else a 400 giving the range")
    func pageLimit() throws {
        func limit(_ query: String) throws(HTTPError) -> Int {
            try HTTPRequest(method: "GET", path: "/v1/x\(query)").pageLimit()
        }
        #expect(try limit("") == 100)
        #expect(try limit("?cursor=abc") == 100)
        #expect(try limit("?limit=1") == 1)
        #expect(try limit("?limit=1000") == 1_000)
        for bad in ["?limit=0", "?limit=1001", "?limit=-1", "?limit=ten", "?limit=", "?limit=1.5"] {
            do {
                _ = try limit(bad)
                Issue.record("accepted \(bad)")
            } catch {
                #expect(error.status == 400)
                #expect(error.code == "invalid_limit")
                #expect(error.field == "limit")
                #expect(error.message == "limit must be a whole number from 1 to 1000 (100 when left out)")
            }
        }
    }

    @Test("a page always carries next_cursor, null on the last")
    func pageBody() throws {
        let last = HTTPResponse.json(PageBody("items", [1, 2], nextCursor: nil))
        #expect(String(decoding: last.body, as: UTF8.self) == #"{"items":[1,2],"next_cursor":null}"#)
        let more = HTTPResponse.json(PageBody("items", [3], nextCursor: "7"))
        #expect(String(decoding: more.body, as: UTF8.self) == #"{"items":[3],"next_cursor":"7"}"#)
        #expect(Paging.invalidCursor().field == "cursor")
    }

    @Test("a listing's app filter: nil when absent, else 1 to the maximum bytes or a 400")
    func appFilter() throws {
        func app(_ query: String) throws(HTTPError) -> String? {
            try HTTPRequest(method: "GET", path: "/v1/x\(query)").appFilter(maximumBytes: 20)
        }
        #expect(try app("") == nil)
        #expect(try app("?app=com.example.a") == "com.example.a")
        for bad in ["?app=", "?app=" + String(repeating: "a", count: 21)] {
            do {
                _ = try app(bad)
                Issue.record("accepted \(bad)")
            } catch {
                #expect(error.status == 400)
                #expect(error.code == "invalid_app")
                #expect(error.field == "app")
                #expect(error.message == "app must be the bundle ID of a configured app, 1 to 20 bytes")
            }
        }
    }

    final class Lines: LogHandler {
        let records = Mutex<[LogRecord]>([])
        func log(_ record: LogRecord) { records.withLock { $0.append(record) } }
    }

    @Test("the access log line of an error answer carries its error code, and only then")
    func accessLogCode() async throws {
        var router = Router()
        router.get("/ok") { _ in .json(["fine": true]) }
        router.get("/refused") { _ in
            throw HTTPError(status: 400, code: "unknown_parameter", message: "no", field: "x")
        }
        let lines = Lines()
        let responder = MiddlewareChain(
            middleware: [
                AccessLogMiddleware(logger: Logger(label: "test", level: .info, handler: lines)),
                ErrorMiddleware(logger: Logger(label: "test", level: .info, handler: lines)),
            ],
            responder: router
        )
        for path in ["/ok", "/refused", "/missing"] {
            _ = try await responder.respond(to: HTTPRequest(method: "GET", path: path))
        }
        let codes = lines.records.withLock { records in
            records.filter { $0.message == "request" }.map { record -> String? in
                guard case .string(let code)? = record.metadata.first(where: { $0.key == "error_code" })?.value
                else { return nil }
                return code
            }
        }
        #expect(codes == [nil, "unknown_parameter", "not_found"])
    }
}
