import Foundation
import HeraldCore
import Testing

@testable import HTTPRouting

@Suite("Router, in memory")
struct RouterTests {
    private func respond(_ router: Router, _ method: String, _ target: String) async throws -> HTTPResponse {
        try await router.respond(to: HTTPRequest(method: method, path: target))
    }

    private func text(_ response: HTTPResponse) -> String {
        String(decoding: response.body, as: UTF8.self)
    }

    @Test("parameters match one non-empty segment and are decoded")
    func parameters() async throws {
        var router = Router()
        router.get("/push/{token}/{id}") { request in
            .text("\(request.parameters["token"]!)|\(request.parameters["id"]!)")
        }
        let ok = try await respond(router, "GET", "/push/ab%2Fcd/42")
        #expect(ok.status == 200)
        #expect(text(ok) == "ab/cd|42")
        #expect(ok.route == "/push/{token}/{id}")

        #expect(try await respond(router, "GET", "/push//42").status == 404)
        #expect(try await respond(router, "GET", "/push/a/42/extra").status == 404)
        #expect(try await respond(router, "GET", "/push/a").status == 404)
    }

    @Test("a trailing slash is a different path")
    func trailingSlash() async throws {
        var router = Router()
        router.get("/a") { _ in .text("no slash") }
        router.get("/b/") { _ in .text("slash") }
        #expect(text(try await respond(router, "GET", "/a")) == "no slash")
        #expect(try await respond(router, "GET", "/a/").status == 404)
        #expect(text(try await respond(router, "GET", "/b/")) == "slash")
        #expect(try await respond(router, "GET", "/b").status == 404)
    }

    @Test("a literal segment beats a parameter, whatever the registration order")
    func literalWins() async throws {
        var router = Router()
        router.get("/devices/{id}") { _ in .text("param") }
        router.get("/devices/count") { _ in .text("literal") }
        #expect(text(try await respond(router, "GET", "/devices/count")) == "literal")
        #expect(text(try await respond(router, "GET", "/devices/7")) == "param")
    }

    @Test("paths with and without escapes resolve alike: root, near-miss literals, specificity")
    func escapedAndPlainPathsAgree() async throws {
        var router = Router()
        router.get("/") { _ in .text("root") }
        router.get("/devices/{id}") { request in .text("param \(request.parameters["id"]!)") }
        router.get("/devices/count") { _ in .text("literal") }
        router.post("/push/{token}/{id}") { _ in .text("push") }
        for (plain, escaped, expected) in [
            ("/devices/count", "/devices/c%6Funt", "literal"),
            ("/devices/7", "/devices/%37", "param 7"),
        ] {
            #expect(text(try await respond(router, "GET", plain)) == expected)
            #expect(text(try await respond(router, "GET", escaped)) == expected)
        }
        #expect(text(try await respond(router, "GET", "/")) == "root")
        #expect(text(try await respond(router, "HEAD", "/")).isEmpty)
        #expect(try await respond(router, "POST", "/pushx/a/b").status == 404)
        #expect(try await respond(router, "POST", "/push/a/b").status == 200)
        #expect(try await respond(router, "GET", "/push/a/b").status == 405)
        #expect(try await respond(router, "GET", "/devices").status == 404)
    }

    @Test("a route's own body limit applies only where that route is the most specific match")
    func bodyLimitFollowsSpecificity() {
        var router = Router()
        router.on("POST", "/upload/{name}", maxBodySize: 10) { _ in .text("limited") }
        router.post("/upload/large") { _ in .text("default") }
        #expect(router.maximumBodySize(method: "POST", rawPath: "/upload/small") == 10)
        #expect(router.maximumBodySize(method: "POST", rawPath: "/upload/sm%61ll") == 10)
        #expect(router.maximumBodySize(method: "POST", rawPath: "/upload/large") == nil)
        #expect(router.maximumBodySize(method: "POST", rawPath: "/upload/l%61rge") == nil)
        #expect(router.maximumBodySize(method: "GET", rawPath: "/upload/small") == nil)
    }

    @Test("404 and 405 use the JSON error shape; 405 lists allowed methods")
    func notFoundAndMethodNotAllowed() async throws {
        var router = Router()
        router.get("/things") { _ in .text("list") }
        router.post("/things") { _ in .text("create") }

        let missing = try await respond(router, "GET", "/other")
        #expect(missing.status == 404)
        #expect(missing.headers["Content-Type"] == "application/json")
        #expect(text(missing).hasPrefix(#"{"error":{"code":"not_found","#))
        #expect(missing.route == nil)

        let wrong = try await respond(router, "DELETE", "/things")
        #expect(wrong.status == 405)
        #expect(wrong.headers["Allow"] == "GET, HEAD, POST")
        #expect(text(wrong).contains(#""code":"method_not_allowed""#))
    }

    @Test("HEAD without a HEAD route runs GET, drops the body, keeps its length")
    func headFallback() async throws {
        var router = Router()
        router.get("/doc") { _ in .text("twelve bytes") }
        router.get("/own") { _ in .text("get") }
        router.head("/own") { _ in HTTPResponse(status: 204) }

        let head = try await respond(router, "HEAD", "/doc")
        #expect(head.status == 200)
        #expect(head.body.isEmpty)
        #expect(head.headers["Content-Length"] == "12")
        #expect(head.headers["Content-Type"] == "text/plain; charset=utf-8")
        #expect(try await respond(router, "HEAD", "/own").status == 204)
    }

    @Test("registering the same method and pattern again replaces the handler")
    func replace() async throws {
        var router = Router()
        router.get("/x") { _ in .text("old") }
        router.on("get", "/x") { _ in .text("new") }
        #expect(text(try await respond(router, "GET", "/x")) == "new")
    }
}

@Suite("HTTPHeaders")
struct HTTPHeadersTests {
    @Test("lookup ignores case and returns the first value; order and repeats are kept")
    func lookup() {
        var headers = HTTPHeaders([("Accept", "a"), ("X-One", "1"), ("accept", "b")])
        #expect(headers["ACCEPT"] == "a")
        #expect(headers.values(for: "accept") == ["a", "b"])
        #expect(headers["missing"] == nil)
        headers.add(name: "Accept", value: "c")
        #expect(headers.map(\.name) == ["Accept", "X-One", "accept", "Accept"])
    }

    @Test("replaceOrAdd keeps the first position and drops the other values; remove drops all")
    func replaceAndRemove() {
        var headers = HTTPHeaders([("A", "1"), ("B", "2"), ("a", "3")])
        headers.replaceOrAdd(name: "A", value: "9")
        #expect(headers.map(\.name) == ["A", "B"])
        #expect(headers["a"] == "9")
        headers.replaceOrAdd(name: "C", value: "new")
        #expect(headers.map(\.value) == ["9", "2", "new"])
        headers.remove(name: "b")
        #expect(headers.values(for: "B").isEmpty)
        #expect(headers.count == 2)
    }

    @Test("single tells one value from none and from a repeated name")
    func single() {
        let headers = HTTPHeaders([("Content-Encoding", "aesgcm"), ("TTL", "60"), ("ttl", "0")])
        #expect(headers.single("content-encoding") == .one("aesgcm"))
        #expect(headers.single("TTL") == .several)
        #expect(headers.single("Urgency") == .none)
    }

    @Test("fields added as bytes keep them, read invalid UTF-8 as U+FFFD, and allow empty values")
    func bytes() {
        var headers = HTTPHeaders(minimumCapacity: 2)
        let name: [UInt8] = Array("X-Raw".utf8)
        let value: [UInt8] = [0x61, 0xFF, 0x62]
        name.withUnsafeBufferPointer { name in value.withUnsafeBufferPointer { headers.add(name: name, value: $0) } }
        name.withUnsafeBufferPointer { headers.add(name: $0, value: UnsafeBufferPointer(start: nil, count: 0)) }
        #expect(headers["x-raw"] == "a\u{FFFD}b")
        #expect(headers.values(for: "X-RAW") == ["a\u{FFFD}b", ""])
        #expect(headers.count == 2)
    }

    @Test("a copy is independent of the headers it was copied from")
    func copies() {
        var original = HTTPHeaders([("A", "1")])
        var copy = original
        copy.add(name: "B", value: "2")
        original.replaceOrAdd(name: "A", value: "changed")
        #expect(original.map(\.value) == ["changed"])
        #expect(copy.map(\.value) == ["1", "2"])
    }

    @Test("description redacts credentials")
    func redaction() {
        let headers = HTTPHeaders([("Authorization", "Bearer secret"), ("Cookie", "s=1"), ("Accept", "*/*")])
        #expect(!headers.description.contains("secret"))
        #expect(!headers.description.contains("s=1"))
        #expect(headers.description.contains("Accept: */*"))
    }
}

@Suite("Requests, responses and errors")
struct MessageTests {
    @Test("a changed copy of a request leaves the original as it was")
    func requestCopies() {
        let original = HTTPRequest(method: "POST", path: "/a?x=1", headers: ["A": "1"], body: [1, 2])
        var copy = original
        copy.headers.add(name: "B", value: "2")
        copy.body = [3]
        copy.method = "PUT"
        copy.parameters["id"] = "7"
        #expect(original.method == "POST" && original.body == [1, 2] && original.headers.count == 1)
        #expect(original.parameters["id"] == nil)
        #expect(copy.method == "PUT" && copy.body == [3] && copy.headers["b"] == "2" && copy.rawPath == "/a")
        #expect(copy.parameters["id"] == "7")
        copy.parameters["id"] = nil
        #expect(copy.parameters.isEmpty)
    }

    @Test("a request target is split into raw path, decoded path and ordered query items")
    func requestTarget() {
        let request = HTTPRequest(method: "post", path: "/a%20b/c?x=1&y=two+words&x=%2F&flag")
        #expect(request.method == "POST")
        #expect(request.rawPath == "/a%20b/c")
        #expect(request.path == "/a b/c")
        #expect(request.query.map(\.name) == ["x", "y", "x", "flag"])
        #expect(request.queryValue("x") == "/")
        #expect(request.queryValue("y") == "two words")
        #expect(request.queryValue("flag") == "")
        #expect(request.queryValue("nope") == nil)
        #expect(request.queryValues("x") == ["1", "/"])
    }

    @Test("percent-decoding rejects broken escapes and invalid UTF-8")
    func percentDecoding() {
        #expect(RequestTarget.percentDecode("%41%42c") == "ABc")
        #expect(RequestTarget.percentDecode("%4") == nil)
        #expect(RequestTarget.percentDecode("%zz") == nil)
        #expect(RequestTarget.percentDecode("%ff") == nil)
        #expect(RequestTarget.percentDecode("a+b") == "a+b")
        #expect(RequestTarget.percentDecode("a+b", plusAsSpace: true) == "a b")
    }

    @Test("absolute-form targets keep only their path")
    func absoluteForm() {
        let target = RequestTarget("http://example.com:8080/x/y?z=1")
        #expect(target.rawPath == "/x/y")
        #expect(target.rawQuery == "z=1")
    }

    @Test("error bodies: exact JSON, field left out when nil")
    func errorBody() {
        let withField = HTTPResponse.error(status: 400, code: "invalid_token", message: "Say \"hi\".", field: "token")
        #expect(
            String(decoding: withField.body, as: UTF8.self)
                == #"{"error":{"code":"invalid_token","message":"Say \"hi\".","field":"token"}}"#
        )
        #expect(withField.headers["Content-Type"] == "application/json")
        let without = HTTPResponse.error(status: 404, code: "not_found", message: "Gone.")
        #expect(String(decoding: without.body, as: UTF8.self) == #"{"error":{"code":"not_found","message":"Gone."}}"#)
    }

    @Test("json() sorts keys and writes dates as RFC 3339")
    func json() {
        struct Payload: Encodable, Sendable {
            var when: Date
            var name: String
        }
        let response = HTTPResponse.json(Payload(when: Date(timeIntervalSince1970: 0), name: "a/b"), status: 201)
        #expect(response.status == 201)
        #expect(String(decoding: response.body, as: UTF8.self) == #"{"name":"a/b","when":"1970-01-01T00:00:00Z"}"#)
    }

    @Test("HTTPError.response carries its headers")
    func errorHeaders() {
        let error = HTTPError(
            status: 503,
            code: "database_unavailable",
            message: "Try again.",
            headers: ["Retry-After": "5"]
        )
        #expect(error.response.status == 503)
        #expect(error.response.headers["Retry-After"] == "5")
        #expect(error.response.headers["Content-Type"] == "application/json")
    }
}

@Suite("Middleware, in memory")
struct MiddlewareTests {
    @Test("request ids: sane ones adopted, others replaced")
    func requestIDSanity() {
        #expect(RequestIDMiddleware.isSane("abc-DEF_1.2"))
        #expect(RequestIDMiddleware.isSane(String(repeating: "a", count: 128)))
        #expect(!RequestIDMiddleware.isSane(String(repeating: "a", count: 129)))
        #expect(!RequestIDMiddleware.isSane(""))
        #expect(!RequestIDMiddleware.isSane("a b"))
        #expect(!RequestIDMiddleware.isSane("a\nb"))
        #expect(!RequestIDMiddleware.isSane("é"))
    }

    @Test("middleware order: the first element is outermost")
    func order() async throws {
        struct Tag: HTTPMiddleware {
            var name: String
            func handle(
                _ request: HTTPRequest,
                answer: HTTPResponseSink,
                next: (HTTPRequest, HTTPResponseSink) -> Void
            ) {
                var request = request
                request.headers.add(name: "X-Trail", value: name)
                next(
                    request,
                    answer.map { [name] result in
                        result.map { response in
                            var response = response
                            response.headers.add(name: "X-Back", value: name)
                            return response
                        }
                    }
                )
            }
        }
        var router = Router()
        router.get("/") { request in .text(request.headers.values(for: "X-Trail").joined(separator: ",")) }
        let chain = MiddlewareChain(middleware: [Tag(name: "outer"), Tag(name: "inner")], responder: router)
        let response = try await chain.respond(to: HTTPRequest(path: "/"))
        #expect(String(decoding: response.body, as: UTF8.self) == "outer,inner")
        #expect(response.headers.values(for: "X-Back") == ["inner", "outer"])
    }
}
