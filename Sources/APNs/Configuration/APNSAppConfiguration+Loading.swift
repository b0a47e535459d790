import Foundation
public import HeraldCore
import HeraldCrypto

extension APNSAppConfiguration {
    /// Reads every configured app: the single-app variables first (when any is set), then the
    /// entries of `HERALD_APPS_FILE` (when set).
    ///
    /// ```json
    /// {"apps": [
    ///   {"bundle_id": "com.example.app", "team_id": "DEF123GHIJ", "key_id": "ABC123DEFG",
    ///    "key_file": "AuthKey_ABC123DEFG.p8", "environment": "production"},
    ///   {"bundle_id": "com.example.other", "certificate_file": "push.pem",
    ///    "certificate_key_file": "push-key.pem"}
    /// ]}
    /// ```
    ///
    /// Each entry has `bundle_id`, optionally `environment` (`production` or `sandbox`; absent:
    /// both) and one credential: `key_file` or `key` (the PEM text) with `team_id` and `key_id`, or
    /// `certificate_file` with `certificate_key_file`. Relative paths are relative to the apps
    /// file's directory. `APNS_AUTH_KEY` may carry its newlines as `\n` escapes.
    ///
    /// - Parameters:
    ///   - environment: the process environment.
    ///   - readFile: reads key, certificate and apps files; injectable for tests.
    /// - Returns: at least one app.
    /// - Throws: ``HeraldCore/ConfigurationError`` with one line per problem, each naming the
    ///   variable or field and what to set. Key contents never appear in it.
    public static func load(
        environment: [String: String],
        readFile: (String) throws -> String = APNSAppConfiguration.defaultReadFile
    ) throws(ConfigurationError) -> [APNSAppConfiguration] {
        var reader = EnvironmentReader(environment)
        var apps: [APNSAppConfiguration] = []
        let appsFile = reader.string(.appsFile)
        if appsFile == nil || singleAppSettings.contains(where: { reader.isSet($0) }) {
            if let app = loadSingleApp(&reader, readFile: readFile, appsFileSet: appsFile != nil) {
                apps.append(app)
            }
        }
        if let appsFile {
            var problems: [String] = []
            apps += loadAppsFile(path: appsFile, readFile: readFile, problems: &problems)
            problems.forEach { reader.report($0) }
        }
        let preferred = reader.choice(
            .apnsEnvironment,
            default: APNSEnvironment.production,
            { APNSEnvironment(name: $0) },
            allowed: "production, sandbox"
        )
        for index in apps.indices { apps[index].preferredEnvironment = preferred }
        for (index, app) in apps.enumerated() {
            let clash = apps[..<index].contains {
                $0.bundleID == app.bundleID
                    && ($0.environment == nil || app.environment == nil || $0.environment == app.environment)
            }
            if clash {
                reader.report(
                    "\(app.bundleID) is configured twice for the same environment: keep one entry per bundle ID "
                        + "and environment"
                )
            }
        }
        try reader.validate()
        return apps
    }

    // MARK: Single app

    /// The variables of the app configured without an apps file; setting any of them asks for it.
    public static let singleAppSettings: [Setting] = [.apnsAuthKey, .apnsAuthKeyFile, .apnsKeyID, .appleTeamID, .topic]

    private static func loadSingleApp(
        _ reader: inout EnvironmentReader,
        readFile: (String) throws -> String,
        appsFileSet: Bool
    ) -> APNSAppConfiguration? {
        let orAppsFile = appsFileSet ? "" : " (or set HERALD_APPS_FILE to an apps file)"
        var pem: String?
        switch (reader.string(.apnsAuthKey), reader.string(.apnsAuthKeyFile)) {
        case (.some, .some):
            reader.report("APNS_AUTH_KEY and APNS_AUTH_KEY_FILE are both set: keep only one")
        case (.some(let text), nil):
            pem = text
        case (nil, .some(let path)):
            if let text = try? readFile(path) {
                pem = text
            } else {
                reader.report("APNS_AUTH_KEY_FILE=\(path) cannot be read: set it to the path of the .p8 key file")
            }
        case (nil, nil):
            reader.report(
                "APNS_AUTH_KEY is not set: set it to the contents of the .p8 key, or APNS_AUTH_KEY_FILE to its path"
                    + orAppsFile
            )
        }
        let keyID = reader.require(.apnsKeyID, "the 10-character Key ID of the .p8 key" + orAppsFile)
        let teamID = reader.require(
            .appleTeamID,
            "the 10-character Team ID of the Apple developer account" + orAppsFile
        )
        let topic = reader.require(.topic, "the app's bundle ID, e.g. com.example.app" + orAppsFile)
        var problems: [String] = []
        let key = makeKey(
            pem: pem.map(unescapeNewlines),
            keyID: keyID,
            teamID: teamID,
            names: ("APNS_AUTH_KEY", "APNS_KEY_ID", "APPLE_TEAM_ID"),
            problems: &problems
        )
        if let topic { checkBundleID(topic, name: "TOPIC", problems: &problems) }
        problems.forEach { reader.report($0) }
        guard let key, let topic, problems.isEmpty else { return nil }
        return APNSAppConfiguration(bundleID: topic, credentials: .token(key))
    }

    /// Docker and `.env` files often turn the key's newlines into `\n`.
    private static func unescapeNewlines(_ pem: String) -> String {
        pem.contains("\n") ? pem : pem.replacingOccurrences(of: "\\n", with: "\n")
    }

    // MARK: Apps file

    /// `cloudkit` is the app's CloudKit key, read by the CloudKit module's settings.
    private static let knownFields: Set<String> = [
        "bundle_id", "team_id", "key_id", "key_file", "key", "certificate_file", "certificate_key_file", "environment",
        "cloudkit",
    ]

    private static func loadAppsFile(
        path: String,
        readFile: (String) throws -> String,
        problems: inout [String]
    ) -> [APNSAppConfiguration] {
        let name = "HERALD_APPS_FILE"
        guard let text = try? readFile(path) else {
            problems.append("\(name)=\(path) cannot be read: set it to the path of the apps JSON file")
            return []
        }
        guard let document = try? APNSJSONValue(parsing: Array(text.utf8)), let root = document.objectValue else {
            problems.append("\(name)=\(path) is not a JSON object: write {\"apps\": [{\"bundle_id\": …}, …]}")
            return []
        }
        for key in root.keys.sorted() where key != "apps" {
            problems.append("\(name) field \(key) is not known: the file has one field, apps")
        }
        guard case .array(let entries)? = root["apps"], !entries.isEmpty else {
            problems.append("\(name) apps is missing or empty: list at least one app as {\"bundle_id\": …}")
            return []
        }
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent()
        func resolve(_ file: String) -> String {
            file.hasPrefix("/") ? file : directory.appendingPathComponent(file).path
        }
        var apps: [APNSAppConfiguration] = []
        for (index, entry) in entries.enumerated() {
            let prefix = "\(name) apps[\(index)]"
            guard let fields = entry.objectValue else {
                problems.append("\(prefix) is not an object: write {\"bundle_id\": …, …}")
                continue
            }
            if let app = loadEntry(fields, prefix: prefix, resolve: resolve, readFile: readFile, problems: &problems) {
                apps.append(app)
            }
        }
        return apps
    }

    private static func loadEntry(
        _ fields: [String: APNSJSONValue],
        prefix: String,
        resolve: (String) -> String,
        readFile: (String) throws -> String,
        problems: inout [String]
    ) -> APNSAppConfiguration? {
        let before = problems.count
        for key in fields.keys.sorted() where !knownFields.contains(key) {
            problems.append(
                "\(prefix).\(key) is not a known field: use \(knownFields.sorted().joined(separator: ", "))"
            )
        }
        func string(_ key: String) -> String? {
            guard let value = fields[key] else { return nil }
            guard let text = value.stringValue?.trimmingCharacters(in: .whitespacesAndNewlines), !text.isEmpty else {
                problems.append("\(prefix).\(key) must be a non-empty string")
                return nil
            }
            return text
        }
        func read(_ key: String, _ what: String) -> String? {
            guard let path = string(key) else { return nil }
            guard let text = try? readFile(resolve(path)) else {
                problems.append("\(prefix).\(key)=\(path) cannot be read: set it to the path of \(what)")
                return nil
            }
            return text
        }

        let bundleID = string("bundle_id")
        if let bundleID {
            checkBundleID(bundleID, name: "\(prefix).bundle_id", problems: &problems)
        } else if fields["bundle_id"] == nil {
            problems.append("\(prefix).bundle_id is missing: set it to the app's bundle ID, e.g. com.example.app")
        }
        var environment: APNSEnvironment?
        if let name = string("environment") {
            environment = APNSEnvironment(name: name)
            if environment == nil {
                problems.append(
                    "\(prefix).environment=\(name) is not valid: use production or sandbox (or omit it for both)"
                )
            }
        }

        let hasKey = fields["key"] != nil || fields["key_file"] != nil
        let hasCertificate = fields["certificate_file"] != nil || fields["certificate_key_file"] != nil
        var credentials: APNSCredentials?
        switch (hasKey, hasCertificate) {
        case (true, true):
            problems.append("\(prefix) has both a key and a certificate: keep key_file (or key) or certificate_file")
        case (false, false):
            problems.append(
                "\(prefix) has no credentials: add key_file (or key), key_id and team_id, or certificate_file and "
                    + "certificate_key_file"
            )
        case (true, false):
            var pem: String?
            if fields["key"] != nil, fields["key_file"] != nil {
                problems.append("\(prefix) has both key and key_file: keep only one")
            } else if fields["key"] != nil {
                pem = string("key")
            } else {
                pem = read("key_file", "the .p8 key file")
            }
            let keyID = string("key_id")
            let teamID = string("team_id")
            if fields["key_id"] == nil {
                problems.append("\(prefix).key_id is missing: set it to the 10-character Key ID of the .p8 key")
            }
            if fields["team_id"] == nil {
                problems.append("\(prefix).team_id is missing: set it to the 10-character Team ID")
            }
            let keyName = fields["key"] != nil ? "\(prefix).key" : "\(prefix).key_file"
            if let key = makeKey(
                pem: pem,
                keyID: keyID,
                teamID: teamID,
                names: (keyName, "\(prefix).key_id", "\(prefix).team_id"),
                problems: &problems
            ) {
                credentials = .token(key)
            }
        case (false, true):
            for key in ["key_id", "team_id"] where fields[key] != nil {
                problems.append("\(prefix).\(key) applies to token keys only: remove it for a certificate")
            }
            if fields["certificate_file"] == nil {
                problems.append("\(prefix).certificate_file is missing: set it to the PEM certificate's path")
            }
            if fields["certificate_key_file"] == nil {
                problems.append("\(prefix).certificate_key_file is missing: set it to the certificate's PEM key's path")
            }
            let certificate = read("certificate_file", "the PEM certificate")
            let key = read("certificate_key_file", "the certificate's PEM private key")
            if let certificate, !certificate.contains("-----BEGIN CERTIFICATE-----") {
                problems.append(
                    "\(prefix).certificate_file is not a PEM certificate: export it as PEM (-----BEGIN CERTIFICATE-----)"
                )
            }
            if let key, !(key.contains("-----BEGIN") && key.contains("PRIVATE KEY-----")) {
                problems.append(
                    "\(prefix).certificate_key_file is not a PEM private key: export the key unencrypted as PEM"
                )
            }
            if let certificate, let key {
                credentials = .certificate(certificatePEM: certificate, keyPEM: key)
            }
        }
        guard problems.count == before, let bundleID, let credentials else { return nil }
        return APNSAppConfiguration(bundleID: bundleID, environment: environment, credentials: credentials)
    }

    // MARK: Shared checks

    private static func makeKey(
        pem: String?,
        keyID: String?,
        teamID: String?,
        names: (key: String, keyID: String, teamID: String),
        problems: inout [String]
    ) -> APNSSigningKey? {
        if let keyID, !APNSSigningKey.isAppleID(keyID) {
            problems.append("\(names.keyID)=\(keyID) is not valid: use the 10 capital letters and digits of the Key ID")
        }
        if let teamID, !APNSSigningKey.isAppleID(teamID) {
            problems.append(
                "\(names.teamID)=\(teamID) is not valid: use the 10 capital letters and digits of the Team ID"
            )
        }
        guard let pem else { return nil }
        guard let privateKey = try? P256PrivateKey(pemRepresentation: pem) else {
            problems.append(
                "\(names.key) is not a P-256 private key in PEM form: use the whole AuthKey_<KEYID>.p8 file, "
                    + "-----BEGIN PRIVATE KEY----- to -----END PRIVATE KEY-----"
            )
            return nil
        }
        guard let keyID, let teamID else { return nil }
        return try? APNSSigningKey(keyID: keyID, teamID: teamID, privateKey: privateKey)
    }

    private static func checkBundleID(_ bundleID: String, name: String, problems: inout [String]) {
        do {
            try APNSRequestChecks.topic(bundleID, field: name)
        } catch {
            problems.append(
                "\(name)=\(bundleID) is not a bundle ID: use letters, digits, '.', '-' and '_', e.g. com.example.app"
            )
        }
    }
}
