import Foundation
public import HeraldCore
public import HeraldCrypto

/// HERALD_CLIENT_TOKEN_KEYS_FILE, read: the ES256 public key of each `kid`, and the apps a kid
/// is bound to. Each entry is either a PEM string or an object:
///
/// ```json
/// {"backend-1": "-----BEGIN PUBLIC KEY-----\n…",
///  "backend-a": {"pem": "-----BEGIN PUBLIC KEY-----\n…", "apps": ["com.example.a"]}}
/// ```
///
/// A kid with `apps` may sign tokens only for those apps (ClientTokenVerifier: 401
/// `app_not_allowed_for_key`); a kid without may sign for any app.
public struct ClientTokenKeysFile: Sendable {
    public var keys: [String: P256PublicKey]
    /// The apps of each bound kid.
    public var apps: [String: [String]]

    /// The most apps one kid may be bound to.
    public static let maximumAppsPerKey = 100

    /// One entry as written: kept lenient here so that every problem can name its kid.
    private enum Entry: Decodable {
        case pem(String)
        case object(pem: String?, apps: [String]?, appsWellFormed: Bool, unknown: [String])
        case other

        private struct Name: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }

        init(from decoder: any Decoder) throws {
            if let text = try? decoder.singleValueContainer().decode(String.self) {
                self = .pem(text)
                return
            }
            guard let object = try? decoder.container(keyedBy: Name.self) else {
                self = .other
                return
            }
            let pem = try? object.decode(String.self, forKey: Name(stringValue: "pem"))
            let hasApps = object.contains(Name(stringValue: "apps"))
            let apps = try? object.decode([String].self, forKey: Name(stringValue: "apps"))
            let unknown = object.allKeys.map(\.stringValue).filter { $0 != "pem" && $0 != "apps" }.sorted()
            self = .object(pem: pem, apps: apps, appsWellFormed: !hasApps || apps != nil, unknown: unknown)
        }
    }

    /// Parses the file's bytes strictly: one JSON object (no duplicate kids), 1 to
    /// ``ClientTokenConfiguration/maximumKeys`` entries, every kid usable, every key a P-256 public
    /// key in PEM, every app a bundle id, at most ``maximumAppsPerKey`` per kid, none twice.
    ///
    /// - Parameter source: how messages name the file (`HERALD_CLIENT_TOKEN_KEYS_FILE /path`).
    /// - Throws: ``HeraldCore/ConfigurationError`` with one line per problem, naming the kid and
    ///   what to write instead.
    public static func parse(_ bytes: [UInt8], source: String) throws(ConfigurationError) -> ClientTokenKeysFile {
        let shape =
            "one JSON object mapping each kid to a PEM public key, or to {\"pem\": \"-----BEGIN PUBLIC KEY-----…\", "
            + "\"apps\": [\"com.example.app\"]}"
        let value: JSONValue
        do {
            value = try JSONValue.parse(bytes, maximumDepth: 3)
        } catch {
            throw ConfigurationError(problems: ["\(source) is not valid JSON: \(error)"])
        }
        guard case .object = value, let object = try? value.decode([String: Entry].self) else {
            throw ConfigurationError(problems: ["\(source) must be \(shape)"])
        }
        guard !object.isEmpty, object.count <= ClientTokenConfiguration.maximumKeys else {
            throw ConfigurationError(problems: [
                "\(source) must hold 1 to \(ClientTokenConfiguration.maximumKeys) keys; it holds \(object.count)"
            ])
        }
        var file = ClientTokenKeysFile(keys: [:], apps: [:])
        var problems: [String] = []
        for (kid, entry) in object.sorted(by: { $0.key < $1.key }) {
            guard ClientTokenVerifier.isAcceptableKeyID(kid) else {
                problems.append(
                    "\(source): the kid \(ClientTokenVerifier.quoted(kid)) is not usable: use 1 to "
                        + "\(ClientTokenLimits.maximumKeyIDBytes) printable ASCII characters"
                )
                continue
            }
            let named = "\(source): the kid \"\(kid)\""
            let pem: String
            switch entry {
            case .pem(let text):
                pem = text
            case .other:
                problems.append("\(named) must map to a PEM string or to {\"pem\": \"…\", \"apps\": [\"…\"]}")
                continue
            case .object(let text, let apps, let appsWellFormed, let unknown):
                guard unknown.isEmpty else {
                    let names = unknown.prefix(3).map { ClientTokenVerifier.quoted($0) }.joined(separator: ", ")
                    problems.append("\(named) has fields this server does not read (\(names)): keep only pem and apps")
                    continue
                }
                guard let text else {
                    problems.append("\(named) has no pem: add \"pem\": \"-----BEGIN PUBLIC KEY-----\\n…\"")
                    continue
                }
                guard appsWellFormed else {
                    problems.append(
                        "\(named) has apps that are not an array of strings: write \"apps\": [\"com.example.app\"]"
                    )
                    continue
                }
                if let apps {
                    if let problem = appsProblem(apps) {
                        problems.append("\(named): \(problem)")
                        continue
                    }
                    file.apps[kid] = apps
                }
                pem = text
            }
            do {
                file.keys[kid] = try P256PublicKey(pemRepresentation: pem)
            } catch {
                problems.append(
                    "\(named): its key is not a P-256 public key in PEM (-----BEGIN PUBLIC KEY-----): \(error)"
                )
            }
        }
        if !problems.isEmpty { throw ConfigurationError(problems: problems) }
        return file
    }

    /// What is wrong with a kid's `apps`, if anything.
    private static func appsProblem(_ apps: [String]) -> String? {
        guard (1...maximumAppsPerKey).contains(apps.count) else {
            return
                "apps must list 1 to \(maximumAppsPerKey) bundle ids (leave apps out to let the kid sign for any app)"
        }
        for app in apps where !ClientTokenVerifier.isBundleID(app) {
            return "the app \(ClientTokenVerifier.quoted(app)) is not a bundle id: use 1 to "
                + "\(ClientTokenLimits.maximumAppBytes) letters, digits, '.', '-' and '_'"
        }
        guard Set(apps).count == apps.count else { return "apps names an app twice: list each once" }
        return nil
    }
}

extension ClientTokenConfiguration {
    /// A problem line for each app a kid is bound to that the server does not serve: such a
    /// binding is a typo, and every token of that kid would be refused.
    public func unknownBoundApps(configured: [String]) -> [String] {
        keyApps.sorted { $0.key < $1.key }.flatMap { kid, apps in
            apps.filter { !configured.contains($0) }.map { app in
                "HERALD_CLIENT_TOKEN_KEYS_FILE: the kid \"\(kid)\" is bound to the app \(app), which this server does "
                    + "not serve (TOPIC or HERALD_APPS_FILE): correct the bundle id or configure the app"
            }
        }
    }
}
