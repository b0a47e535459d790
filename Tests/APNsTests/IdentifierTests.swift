import APNs
import Foundation
import Testing

@Suite struct IdentifierTests {
    @Test func parsesWhatItPrintsInEitherCase() {
        for _ in 0..<100 {
            let id = APNSIdentifier.next()
            let text = APNSIdentifier.lowercaseString(id)
            #expect(text == id.uuidString.lowercased())
            #expect(APNSIdentifier.parse(text) == id)
            #expect(APNSIdentifier.parse(text.uppercased()) == id)
        }
    }

    @Test(arguments: [
        "",
        "123e4567-e89b-12d3-a456-42661417400",
        "123e4567-e89b-12d3-a456-4266141740000",
        "123e4567xe89b-12d3-a456-426614174000",
        "123e4567-e89b-12d3-a456-42661417400g",
        "123e4567-e89b-12d3-a456-42661417400é",
        "123e4567-e89b-12d3-a456-42661417400:",
        "123e4567-e89b-12d3-a456-42661417400@",
        "123e4567-e89b-12d3-a456-42661417400`",
        "123e4567-e89b-12d3-a456-42661417400G",
        "/23e4567-e89b-12d3-a456-426614174000",
    ])
    func rejectsAnythingElse(_ text: String) {
        #expect(APNSIdentifier.parse(text) == nil)
    }

    @Test func parsesAKnownValue() {
        let text = "123e4567-e89b-12d3-a456-426614174000"
        #expect(APNSIdentifier.parse(text) == UUID(uuidString: text))
    }
}
