import Testing

@testable import HTTPRouting

/// `HTTPResponse.conditional(on:)`: a strong ETag of the body, 304 without a body when the
/// request's `If-None-Match` names it.
@Suite struct ConditionalResponseTests {
    private func get(_ ifNoneMatch: String? = nil) -> HTTPRequest {
        var headers = HTTPHeaders()
        if let ifNoneMatch { headers.replaceOrAdd(name: "If-None-Match", value: ifNoneMatch) }
        return HTTPRequest(method: "GET", path: "/v1/client/upcoming", headers: headers)
    }

    @Test func aTagOfTheBodyThen304WithoutABody() throws {
        let response = HTTPResponse.text(#"{"a":1}"#).conditional(on: get())
        #expect(response.status == 200)
        let tag = try #require(response.headers["ETag"])
        #expect(tag.count == 18 && tag.hasPrefix("\"") && tag.hasSuffix("\""))
        #expect(response.headers["Cache-Control"] == "private, no-cache")
        #expect(response.body == Array(#"{"a":1}"#.utf8))

        for header in [tag, "\"0000000000000000\", \(tag)", "W/\(tag)", "*"] {
            let again = HTTPResponse.text(#"{"a":1}"#).conditional(on: get(header))
            #expect(again.status == 304, "If-None-Match: \(header)")
            #expect(again.body.isEmpty)
            #expect(again.headers["ETag"] == tag)
        }
        let changed = HTTPResponse.text(#"{"a":2}"#).conditional(on: get(tag))
        #expect(changed.status == 200, "another body is another version")
        #expect(changed.headers["ETag"] != tag)
    }

    @Test func onlyA200IsTagged() {
        let refused = HTTPResponse.error(status: 404, code: "not_found", message: "no").conditional(on: get("*"))
        #expect(refused.status == 404)
        #expect(refused.headers["ETag"] == nil)
    }
}
