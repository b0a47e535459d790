import HeraldCore
import Testing

@Suite struct CommandLineArgumentsTests {
    let spec = CommandSpec(
        name: "herald send",
        summary: "Send one push.",
        usage: "herald send --token HEX",
        options: [
            .init("token", value: "HEX", help: "Device token."),
            .init("sandbox", help: "Use the sandbox."),
            .init("key", value: "ID:PEM", repeatable: true, help: "A key."),
        ]
    )

    @Test func parsesValuesFlagsAndPositionals() throws {
        let parsed = try spec.parse(["--token", "ab", "--sandbox", "--key=a:b", "--key", "c:d", "extra", "--", "--x"])
        #expect(parsed.value("token") == "ab")
        #expect(parsed.flag("sandbox"))
        #expect(parsed.all("key") == ["a:b", "c:d"])
        #expect(parsed.positionals == ["extra", "--x"])
        #expect(!parsed.wantsHelp)
    }

    @Test func rejectsMistakesWithActionableMessages() {
        #expect(throws: UsageError.self) { try spec.parse(["--nope"]) }
        do {
            _ = try spec.parse(["--token"])
            Issue.record("a missing value must be an error")
        } catch {
            #expect(error.message.contains("--token needs a value"))
        }
        #expect(throws: UsageError.self) { try spec.parse(["--token", "a", "--token", "b"]) }
        #expect(throws: UsageError.self) { try spec.parse(["--sandbox=yes"]) }
    }

    @Test func helpListsEveryOption() throws {
        #expect(try spec.parse(["--help"]).wantsHelp)
        for name in ["--token HEX", "--sandbox", "--key ID:PEM", "--help"] { #expect(spec.help.contains(name)) }
    }
}
