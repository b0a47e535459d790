public import Foundation
public import HeraldCore

/// CloudKit's settings from the environment: the default key (`CLOUDKIT_KEY_ID` with
/// `CLOUDKIT_PRIVATE_KEY` or `CLOUDKIT_PRIVATE_KEY_FILE`), per-app keys from the `cloudkit` object
/// of `HERALD_APPS_FILE` entries, `CLOUDKIT_URL` and `CLOUDKIT_CA_FILE`.
///
/// ```json
/// {"apps": [{"bundle_id": "com.example.app", "key_id": "…", "key_file": "AuthKey.p8",
///            "cloudkit": {"key_id": "1a2b…", "key_file": "eckey.pem", "container": "iCloud.com.example.app"}}]}
/// ```
public struct CloudKitSettings: Sendable {
    /// A key with the container it is meant for (per-app keys may name one).
    public struct AppKey: Sendable {
        public var signer: CloudKitSigner
        public var container: String?
    }

    /// The key of the variables; nil when `CLOUDKIT_KEY_ID` is unset.
    public var defaultKey: CloudKitSigner?
    /// Per-app keys, by bundle ID.
    public var appKeys: [String: AppKey] = [:]
    /// ``CloudKitClient/Configuration`` with `url` and `caFile` set.
    public var clientConfiguration = CloudKitClient.Configuration()

    public init() {}

    /// The key for `app` (its own, else the default); nil when none is configured.
    public func signer(app: String?) -> CloudKitSigner? {
        if let app, let key = appKeys[app] { return key.signer }
        return defaultKey
    }

    /// Reads the settings.
    ///
    /// - Throws: ``HeraldCore/ConfigurationError``, one line per problem, naming the variable or
    ///   field and what to set; key contents never appear in it.
    public static func load(
        environment: [String: String],
        readFile: (String) throws -> String = { try String(contentsOfFile: $0, encoding: .utf8) }
    ) throws(ConfigurationError) -> CloudKitSettings {
        var reader = EnvironmentReader(environment)
        var settings = CloudKitSettings()
        settings.clientConfiguration.url = reader.string(.cloudKitURL) ?? settings.clientConfiguration.url
        do {
            _ = try CloudKitConnection.Origin(url: settings.clientConfiguration.url)
        } catch {
            reader.report(error.reason)
        }
        settings.clientConfiguration.caFile = reader.string(.cloudKitCAFile)
        if let caFile = settings.clientConfiguration.caFile, (try? readFile(caFile)) == nil {
            reader.report("CLOUDKIT_CA_FILE=\(caFile) cannot be read: set it to the path of a PEM file")
        }
        let keyID = reader.string(.cloudKitKeyID)
        let inline = reader.string(.cloudKitPrivateKey)
        let file = reader.string(.cloudKitPrivateKeyFile)
        if let keyID {
            var pem: String?
            switch (inline, file) {
            case (let text?, nil): pem = text.replacingOccurrences(of: "\\n", with: "\n")
            case (nil, let path?):
                pem = try? readFile(path)
                if pem == nil {
                    reader.report("CLOUDKIT_PRIVATE_KEY_FILE=\(path) cannot be read: set it to the path of the PEM key")
                }
            case (nil, nil):
                reader.report(
                    "CLOUDKIT_KEY_ID is set without its key: set CLOUDKIT_PRIVATE_KEY_FILE (or CLOUDKIT_PRIVATE_KEY)"
                )
            case (.some, .some):
                reader.report("CLOUDKIT_PRIVATE_KEY and CLOUDKIT_PRIVATE_KEY_FILE are both set: keep one")
            }
            if let pem {
                do {
                    settings.defaultKey = try CloudKitSigner(keyID: keyID, pemRepresentation: pem)
                } catch {
                    reader.report("CLOUDKIT_KEY_ID/CLOUDKIT_PRIVATE_KEY: \(error.reason)")
                }
            }
        } else if inline != nil || file != nil {
            reader.report("a CloudKit private key is set without CLOUDKIT_KEY_ID: set the key's Key ID too")
        }
        if let appsFile = reader.string(.appsFile) {
            var problems: [String] = []
            settings.appKeys = appKeys(path: appsFile, readFile: readFile, problems: &problems)
            problems.forEach { reader.report($0) }
        }
        try reader.validate()
        return settings
    }

    /// The `cloudkit` objects of the apps file's entries (the APNs loader reads the rest).
    private static func appKeys(
        path: String,
        readFile: (String) throws -> String,
        problems: inout [String]
    ) -> [String: AppKey] {
        guard let text = try? readFile(path), let root = CloudKitResponse.object(Array(text.utf8)),
            case .array(let entries)? = root["apps"]
        else {
            return [:]  // The APNs loader reports an unreadable or malformed file.
        }
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent()
        var keys: [String: AppKey] = [:]
        for (index, entry) in entries.enumerated() {
            guard let fields = entry.objectValue, let object = fields["cloudkit"] else { continue }
            let prefix = "HERALD_APPS_FILE apps[\(index)].cloudkit"
            guard let bundleID = fields["bundle_id"]?.stringValue, let cloudkit = object.objectValue else {
                problems.append("\(prefix) must be an object in an entry with a bundle_id")
                continue
            }
            let known: Set<String> = ["key_id", "key_file", "key", "container"]
            for key in cloudkit.keys.sorted() where !known.contains(key) {
                problems.append("\(prefix).\(key) is not a known field: use container, key, key_file, key_id")
            }
            guard let keyID = cloudkit["key_id"]?.stringValue else {
                problems.append("\(prefix).key_id is missing: give the server-to-server key's Key ID")
                continue
            }
            var pem: String?
            switch (cloudkit["key"]?.stringValue, cloudkit["key_file"]?.stringValue) {
            case (let text?, nil): pem = text
            case (nil, let file?):
                let resolved = file.hasPrefix("/") ? file : directory.appendingPathComponent(file).path
                pem = try? readFile(resolved)
                if pem == nil { problems.append("\(prefix).key_file \(resolved) cannot be read") }
            default:
                problems.append("\(prefix) needs exactly one of key_file and key (the PEM private key)")
            }
            let container = cloudkit["container"]?.stringValue
            if let container, !CloudKitClient.isWellFormedContainer(container) {
                problems.append("\(prefix).container \(container) is not one: use iCloud.com.example.app")
            }
            guard let pem else { continue }
            do {
                keys[bundleID] = AppKey(
                    signer: try CloudKitSigner(keyID: keyID, pemRepresentation: pem),
                    container: container
                )
            } catch {
                problems.append("\(prefix): \(error.reason)")
            }
        }
        return keys
    }
}
