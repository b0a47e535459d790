import APNs
import ClientTokens
import Devices
import Foundation
import HeraldAPI
import HeraldCore
import HeraldFeature
import Storage
import Webhooks

/// `herald config`: checks the configuration `herald serve` would start with and prints it, secrets
/// redacted; or prints the generated reference (docs/CONFIGURATION.md) or example environment file
/// (contrib/herald.env.example).
enum ConfigCommand {
    static let spec = CommandSpec(
        name: "herald config",
        summary: "Check the configuration herald serve would use and print it (secrets redacted); "
            + "exit 2 listing every problem.",
        usage: "herald config [--host HOST] [--port PORT] [--database-url URL] | --reference-markdown | --env-example",
        options: [
            .init("host", value: "HOST", help: "As for herald serve (HOST)."),
            .init("port", value: "PORT", help: "As for herald serve (PORT)."),
            .init("database-url", value: "URL", help: "As for herald serve (DATABASE_URL)."),
            .init("reference-markdown", help: "Print the configuration reference (docs/CONFIGURATION.md) and exit."),
            .init("env-example", help: "Print the example environment file (contrib/herald.env.example) and exit."),
        ]
    )

    static func run(_ arguments: [String]) -> Int32 {
        let parsed: ParsedArguments
        do {
            parsed = try spec.parse(arguments)
        } catch {
            printError("herald config: \(error.message)")
            return 2
        }
        if parsed.wantsHelp {
            print(spec.help, terminator: "")
            return 0
        }
        if let extra = parsed.positionals.first {
            printError("herald config: unexpected argument '\(extra)'; see 'herald config --help'")
            return 2
        }
        if parsed.flag("reference-markdown") {
            print(SettingsReference.markdown, terminator: "")
            return 0
        }
        if parsed.flag("env-example") {
            print(SettingsReference.environmentFile, terminator: "")
            return 0
        }
        var environment = ProcessInfo.processInfo.environment
        if let host = parsed.value("host") { environment[Setting.host.name] = host }
        if let port = parsed.value("port") { environment[Setting.port.name] = port }
        if let url = parsed.value("database-url") { environment[Setting.databaseURL.name] = url }

        for note in unknownVariables(environment) { printError("herald config: note: \(note)") }
        let (problems, apps) = check(environment)
        guard problems.isEmpty else {
            for problem in problems { printError("herald config: \(problem)") }
            printError(
                "herald config: \(problems.count) problem\(problems.count == 1 ? "" : "s"); "
                    + "fix \(problems.count == 1 ? "it" : "them") and run herald config again"
            )
            return 2
        }
        print(effective(environment, apps: apps), terminator: "")
        return 0
    }

    /// Every problem `herald serve` would refuse to start with, and the APNs apps it would use.
    static func check(_ environment: [String: String]) -> (problems: [String], apps: [APNSAppConfiguration]) {
        var problems: [String] = []
        do {
            _ = try ServerConfiguration.load(environment: environment)
        } catch {
            problems += error.problems
        }
        do {
            _ = try APIKeys.load(environment: environment)
        } catch {
            problems += error.problems
        }
        do {
            _ = try MetricsToken.load(environment: environment)
        } catch {
            problems += error.problems
        }
        do {
            _ = try JobSettings.load(environment: environment)
        } catch {
            problems += error.problems
        }
        do {
            _ = try DeviceSettings.load(environment: environment)
        } catch {
            problems += error.problems
        }
        do {
            _ = try ClientDeviceSettings.load(environment: environment)
        } catch {
            problems += error.problems
        }
        do {
            _ = try ClientTokenConfiguration.load(environment: environment)
        } catch {
            problems += error.problems
        }
        do {
            _ = try WebhookSettings.load(environment: environment)
        } catch {
            problems += error.problems
        }
        do {
            _ = try ClientRateLimiter.Limits.load(environment: environment)
        } catch {
            problems += error.problems
        }
        // The features that check their own settings (Live Activities, Wake, the relay with
        // HERALD_RELAY=1 and no APNs to relay with), as `herald serve` has them checked.
        var features = FeatureContext(environment: environment, logger: Logger(label: "herald"))
        features.apnsConfigured = ServeCommand.configuresAPNs(environment)
        problems += HeraldFeatures.assembly.settingsProblems(context: features)
        var apps: [APNSAppConfiguration] = []
        if ServeCommand.configuresAPNs(environment) {
            do {
                apps = try APNsSettings.load(environment: environment, relayRequired: false).apps
            } catch {
                problems += error.problems
            }
        } else {
            // No app: the endpoints and the default environment are still checked, so that a
            // mistake shows before the credentials are added.
            do {
                _ = try APNSEndpoints.load(environment: environment)
            } catch {
                problems += error.problems
            }
            var reader = EnvironmentReader(environment)
            _ = reader.choice(
                .apnsEnvironment,
                default: .production,
                { APNSEnvironment(name: $0) },
                allowed: "production, sandbox"
            )
            problems += reader.problems
        }
        if !apps.isEmpty, let tokens = try? ClientTokenConfiguration.load(environment: environment) {
            problems += tokens.unknownBoundApps(configured: apps.map(\.bundleID))
        }
        return (problems, apps)
    }

    /// Variables that look like Herald's but are not read (a typo such as `HERALD_API_KEY`): Herald
    /// ignores them, so they are notes, not problems. `HERALD_TEST_*` belong to the test suite.
    static func unknownVariables(_ environment: [String: String]) -> [String] {
        let known = Set(HeraldFeatures.settings.map(\.name))
        return environment.keys.sorted()
            .filter { ($0.hasPrefix("HERALD_") || $0.hasPrefix("APNS_")) && !$0.hasPrefix("HERALD_TEST_") }
            .filter { !known.contains($0) }
            .map { name in
                let similar = HeraldFeatures.settings.first { $0.name.hasPrefix(name) || name.hasPrefix($0.name) }
                return "\(name) is not a Herald setting and is ignored"
                    + (similar.map { ": did you mean \($0.name)?" } ?? ": herald serve --help lists every setting")
            }
    }

    /// The configuration in effect, one variable a line, grouped as in the reference.
    static func effective(_ environment: [String: String], apps: [APNSAppConfiguration]) -> String {
        let reader = EnvironmentReader(environment)
        let width = (HeraldFeatures.settings.map(\.name.count).max() ?? 0) + 1
        var text = "# herald \(Herald.version): the configuration herald serve would use (secrets redacted)\n"
        for group in Setting.Group.allCases {
            text += "\n# \(group.rawValue)\n"
            for setting in HeraldFeatures.settings where setting.group == group {
                let value: String
                let source: String
                if let given = reader.string(setting) {
                    value = shown(given, of: setting)
                    source = "set"
                } else if let fallback = setting.defaultValue {
                    value = fallback
                    source = "default"
                } else {
                    value = ""
                    source = "unset: \(setting.whenUnset ?? "unset")"
                }
                let assignment = "\(setting.name)=\(value)"
                text += assignment.padding(toLength: max(width + 24, assignment.count + 2), withPad: " ", startingAt: 0)
                text += "# \(source)\n"
            }
        }
        text += "\n# APNs apps\n"
        if apps.isEmpty {
            text +=
                "# none: /v1/notifications answers 503 and the relay is off (set APNS_AUTH_KEY or HERALD_APPS_FILE)\n"
        }
        for app in apps {
            let environments = app.environment.map { "\($0) only" } ?? "production and sandbox"
            text += "# \(app.bundleID): \(environments); pushes naming no environment go to \(app.defaultEnvironment)\n"
        }
        return text
    }

    /// `value` as it may be shown: a secret only as its size, a URL without its password.
    static func shown(_ value: String, of setting: Setting) -> String {
        switch setting.secrecy {
        case .none:
            return value
        case .urlPassword:
            return DatabaseFactory.redact(url: value)
        case .whole:
            if setting == .apiKeys {
                let count = value.split(separator: ",").filter { !$0.allSatisfy(\.isWhitespace) }.count
                return "(\(count) key\(count == 1 ? "" : "s"), redacted)"
            }
            return "(set, \(value.utf8.count) bytes, redacted)"
        }
    }
}
