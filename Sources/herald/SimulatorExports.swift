import Foundation
import HeraldCore

/// The variables `herald send`, `herald channels` and `herald broadcast` need to reach a simulator
/// instead of Apple: its URL for pushes and channel management, the certificate to trust, the key
/// that signs provider tokens, and the app's bundle ID. Printed as an `export …` block, or written
/// as an environment file (`--env-file`).
struct SimulatorExports {
    var values: [(setting: Setting, value: String)] = []
    /// Comment lines for what cannot be given (a `--key` whose private half the simulator lacks).
    var notes: [String] = []

    /// - Parameters:
    ///   - keyFile: the private key's `.p8` file, when the simulator has it.
    init(url: String, caFile: String?, keyFile: String?, keyID: String?, teamID: String?, topic: String) {
        for setting in [
            Setting.apnsProductionURL, .apnsSandboxURL, .apnsManagementProductionURL, .apnsManagementSandboxURL,
        ] {
            values.append((setting, url))
        }
        if let caFile {
            values.append((.apnsCAFile, caFile))
        } else if url.hasPrefix("https:") {
            notes.append("APNS_CA_FILE: the certificate of the CA that signed --tls-cert, unless the system trusts it")
        }
        if let keyFile {
            values.append((.apnsAuthKeyFile, keyFile))
        } else {
            notes.append("APNS_AUTH_KEY_FILE: set it to the .p8 of the key given with --key")
        }
        if let keyID { values.append((.apnsKeyID, keyID)) }
        if let teamID {
            values.append((.appleTeamID, teamID))
        } else {
            notes.append("APPLE_TEAM_ID: any 10-character team id (the simulator accepts any)")
        }
        values.append((.topic, topic))
    }

    /// Adds what `herald cloudkit` and CloudKit-mode wake schedules need to reach the simulator's
    /// CloudKit endpoints; `keyFile` is the private key's PEM, when the simulator made it or was
    /// given it as a file.
    mutating func addCloudKit(url: String, caFile: String?, keyID: String, keyFile: String?) {
        values.append((.cloudKitURL, url))
        if let caFile { values.append((.cloudKitCAFile, caFile)) }
        values.append((.cloudKitKeyID, keyID))
        if let keyFile {
            values.append((.cloudKitPrivateKeyFile, keyFile))
        } else {
            notes.append(
                "CLOUDKIT_PRIVATE_KEY_FILE: set it to the private key whose public half --cloudkit-key was given"
            )
        }
    }

    /// `export NAME=value` lines for a shell, after a comment saying what they are for.
    var shellBlock: String {
        var lines = ["# herald send, herald channels and herald broadcast reach this simulator with:"]
        lines += notes.map { "# \($0)" }
        lines += values.map { "export \($0.setting.name)=\(Self.quoted($0.value))" }
        return lines.joined(separator: "\n")
    }

    /// `NAME=value` lines, readable by `set -a; . FILE; set +a`, systemd and `docker --env-file`.
    var environmentFile: String {
        var lines = ["# The simulator's settings for herald send, herald channels and herald broadcast."]
        lines += notes.map { "# \($0)" }
        lines += values.map { "\($0.setting.name)=\(Self.quoted($0.value))" }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Writes ``environmentFile`` to `path`, readable by its owner only (it names the signing key).
    func write(to path: String) throws {
        do {
            try PrivateFile.write(Array(environmentFile.utf8), to: path)
        } catch {
            throw SimulatorExportError(path: path, reason: error)
        }
    }

    /// `value` as one shell word: bare when it holds only safe characters, else single-quoted.
    static func quoted(_ value: String) -> String {
        let safe = value.unicodeScalars.allSatisfy { scalar in
            scalar.isASCII
                && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar)
                    || "/._-:@+=,%".unicodeScalars.contains(scalar))
        }
        if safe && !value.isEmpty { return value }
        return "'" + value.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}

struct SimulatorExportError: Error, CustomStringConvertible {
    var path: String
    var reason: PrivateFileError?
    var description: String {
        reason.map(String.init(describing:)) ?? "cannot write \(path): check that its directory exists and is writable"
    }
}
