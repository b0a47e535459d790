import HeraldCore
import Testing

@Suite struct LogRedactionTests {
    static let token = String(repeating: "0123456789abcdef", count: 4)
    static let jwt = "eyJhbGciOiJFUzI1NiIsImtpZCI6IktFWSJ9.eyJpc3MiOiJURUFNIiwiaWF0IjoxfQ.c2lnbmF0dXJl"

    @Test(
        "runs of 64+ hex digits keep their first 8, JWTs their first 3; other paths are left alone",
        arguments: [
            ("/push/\(token)", "/push/01234567…"),
            ("/push/\(token)/7", "/push/01234567…/7"),
            ("/push/\(token.uppercased())\(token)", "/push/01234567…"),
            ("/x/\(token)-\(token)", "/x/01234567…-01234567…"),
            ("/v1/\(jwt)", "/v1/eyJ…"),
            ("/v1/\(jwt)/\(token)", "/v1/eyJ…/01234567…"),
            ("/push/\(token.dropLast())", "/push/\(token.dropLast())"),
            ("/v1/notifications/9f0c2b", "/v1/notifications/9f0c2b"),
            ("/v1/eyJ-not-a-jwt", "/v1/eyJ-not-a-jwt"),
            ("/", "/"),
        ]
    )
    func path(_ input: String, _ expected: String) {
        #expect(LogRedaction.path(input) == expected)
    }
}
