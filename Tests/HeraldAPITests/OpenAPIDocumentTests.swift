import HTTPRouting
import HeraldCore
import HeraldFeature
import Testing

/// `GET /v1/openapi.json` is generated from the routes' declarations: what each declares shows
/// in the document, and a /v1 route without a description is a problem that stops start-up.
@Suite struct OpenAPIDocumentTests {
    static let widget = APISchema.named("Widget", APISchema.object(["id": APISchema.uuid, "size": APISchema.integer]))

    static func routes(describingAll: Bool = true) -> [RouteSummary] {
        var group = RouteGroup("/v1/widgets", authentication: .apiKey)
        group.get("", query: ["size"] + Paging.parameters) { _ in HTTPResponse(status: 200) }
        group.post("", idempotent: true) { _ in HTTPResponse(status: 201) }
        group.get("/{id}") { _ in HTTPResponse(status: 200) }
        group.describe(
            "GET",
            "",
            APIOperation(
                "List widgets",
                parameters: ["size": APIParameter("Only this size.", APISchema.integer(1...9))],
                responses: [200: .json("A page.", APISchema.page("widgets", widget))]
            )
        )
        group.describe(
            "POST",
            "",
            APIOperation(
                "Create a widget",
                request: .json("The widget.", APISchema.object(["size": APISchema.integer], closed: true)),
                responses: [201: .json("The widget.", widget)]
            )
        )
        if describingAll {
            group.describe("GET", "/{id}", APIOperation("Read a widget", responses: [200: .json("It.", widget)]))
        }
        var client = RouteGroup("/v1/client/widgets", authentication: .clientToken)
        client.get("") { _ in HTTPResponse(status: 200) }
        client.describe("GET", "", APIOperation("The user's widgets", responses: [200: .json("Them.", widget)]))
        // Outside /v1: not described, not a problem.
        let health = FeatureRoute("GET", "/healthz", authentication: .none) { _ in HTTPResponse(status: 200) }
        return (group.routes + client.routes + [health]).map { RouteSummary($0, feature: "Widgets") }
    }

    @Test func whatARouteDeclaresIsInTheDocument() throws {
        let document = OpenAPIDocument(Self.routes(), version: "9.9.9")
        #expect(document.problems.isEmpty)
        let json = document.json
        #expect(json["openapi"] == "3.1.0")
        #expect(json["info"]?["version"] == "9.9.9")
        let list = try #require(json["paths"]?["/v1/widgets"]?["get"])
        #expect(list["security"] == [["apiKey": []]])
        #expect(list["tags"] == ["Widgets"])
        guard case .array(let parameters) = list["parameters"] else {
            Issue.record("no parameters")
            return
        }
        #expect(parameters.compactMap { $0["name"]?.stringValue } == ["size", "limit", "cursor"])
        #expect(parameters.first?["schema"]?["maximum"] == 9)
        #expect(parameters[1]["schema"]?["maximum"] == 1_000, "limit: every list's bounds")
        #expect(
            list["responses"]?["default"]?["content"]?["application/json"]?["schema"]?["$ref"]
                == "#/components/schemas/Error"
        )
        let create = try #require(json["paths"]?["/v1/widgets"]?["post"])
        guard case .array(let createParameters) = create["parameters"] else {
            Issue.record("no Idempotency-Key")
            return
        }
        #expect(createParameters.first?["name"] == "Idempotency-Key")
        #expect(create["requestBody"]?["content"]?["application/json"]?["schema"]?["additionalProperties"] == false)
        let read = try #require(json["paths"]?["/v1/widgets/{id}"]?["get"])
        guard case .array(let readParameters) = read["parameters"] else {
            Issue.record("no path parameter")
            return
        }
        #expect(readParameters.first?["in"] == "path")
        #expect(json["paths"]?["/v1/client/widgets"]?["get"]?["security"] == [["clientToken": []]])
        #expect(json["paths"]?["/healthz"] == nil)
        // A named schema is written once, in the components, and referred to.
        #expect(json["components"]?["schemas"]?["Widget"]?["type"] == "object")
        #expect(
            read["responses"]?["200"]?["content"]?["application/json"]?["schema"]?["$ref"]
                == "#/components/schemas/Widget"
        )
    }

    @Test func aRouteWithoutADescriptionOrANameForTwoSchemasIsAProblem() {
        let undescribed = OpenAPIDocument(Self.routes(describingAll: false), version: "1")
        #expect(undescribed.problems.count == 1)
        #expect(undescribed.problems.first?.contains("GET /v1/widgets/{id} has no APIOperation") == true)

        var group = RouteGroup("/v1/gadgets", authentication: .apiKey)
        group.get("") { _ in HTTPResponse(status: 200) }
        group.post("") { _ in HTTPResponse(status: 201) }
        group.describe("GET", "", APIOperation("List", responses: [200: .json("A gadget.", Self.widget)]))
        let other = APISchema.named("Widget", APISchema.string)
        group.describe("POST", "", APIOperation("Create", responses: [201: .json("A gadget.", other)]))
        let clashing = OpenAPIDocument(group.routes.map { RouteSummary($0, feature: "Gadgets") }, version: "1")
        #expect(clashing.problems.contains { $0.contains("Widget stands for two different schemas") })
        #expect(
            clashing.problems.contains { $0.contains("POST /v1/gadgets reads a body and declares no request schema") }
        )
    }
}
