import APNs
import Foundation
import HeraldCore
import Testing

@Suite struct AppConfigurationTests {
    /// Files the loader may read, by path.
    private func reader(_ files: [String: String]) -> (String) throws -> String {
        { path in
            guard let text = files[path] else { throw CocoaError(.fileNoSuchFile) }
            return text
        }
    }

    private func problems(
        _ environment: [String: String],
        files: [String: String] = [:]
    ) -> [String] {
        do {
            _ = try APNSAppConfiguration.load(environment: environment, readFile: reader(files))
            return []
        } catch {
            return error.problems
        }
    }

    private let singleApp = [
        "APNS_AUTH_KEY": Fixtures.p8, "APNS_KEY_ID": Fixtures.keyID, "APPLE_TEAM_ID": Fixtures.teamID,
        "TOPIC": Fixtures.bundleID,
    ]

    /// `APNS_ENVIRONMENT` chooses where a push naming no environment goes; the app still serves both.
    @Test func apnsEnvironmentIsTheDefaultEnvironment() throws {
        let unset = try APNSAppConfiguration.load(environment: singleApp, readFile: reader([:]))
        #expect(unset[0].defaultEnvironment == .production)
        var environment = singleApp
        environment["APNS_ENVIRONMENT"] = "sandbox"
        let sandbox = try APNSAppConfiguration.load(environment: environment, readFile: reader([:]))
        #expect(sandbox[0].defaultEnvironment == .sandbox)
        #expect(sandbox[0].serves(.production) && sandbox[0].serves(.sandbox))
        environment["APNS_ENVIRONMENT"] = "staging"
        #expect(problems(environment) == ["APNS_ENVIRONMENT=staging is not valid: use one of production, sandbox"])
    }

    @Test func singleAppFromVariables() throws {
        let apps = try APNSAppConfiguration.load(environment: singleApp, readFile: reader([:]))
        #expect(apps.count == 1)
        #expect(apps[0].bundleID == Fixtures.bundleID)
        #expect(apps[0].environment == nil)
        #expect(apps[0].serves(.sandbox) && apps[0].serves(.production))
        #expect(apps[0].credentials.signingKey?.keyID == Fixtures.keyID)
        #expect(apps[0].credentials.signingKey?.teamID == Fixtures.teamID)
    }

    @Test func keyWithEscapedNewlinesOrFromAFile() throws {
        var environment = singleApp
        environment["APNS_AUTH_KEY"] = Fixtures.p8.replacingOccurrences(of: "\n", with: "\\n")
        #expect(try APNSAppConfiguration.load(environment: environment, readFile: reader([:])).count == 1)

        environment["APNS_AUTH_KEY"] = nil
        environment["APNS_AUTH_KEY_FILE"] = "/keys/AuthKey.p8"
        #expect(
            try APNSAppConfiguration.load(environment: environment, readFile: reader(["/keys/AuthKey.p8": Fixtures.p8]))
                .count == 1
        )
        #expect(
            problems(environment) == [
                "APNS_AUTH_KEY_FILE=/keys/AuthKey.p8 cannot be read: set it to the path of the .p8 key file"
            ]
        )
    }

    @Test func nothingConfiguredNamesEachVariable() {
        #expect(
            problems([:]) == [
                "APNS_AUTH_KEY is not set: set it to the contents of the .p8 key, or APNS_AUTH_KEY_FILE to its path (or set HERALD_APPS_FILE to an apps file)",
                "APNS_KEY_ID is not set: set it to the 10-character Key ID of the .p8 key (or set HERALD_APPS_FILE to an apps file)",
                "APPLE_TEAM_ID is not set: set it to the 10-character Team ID of the Apple developer account (or set HERALD_APPS_FILE to an apps file)",
                "TOPIC is not set: set it to the app's bundle ID, e.g. com.example.app (or set HERALD_APPS_FILE to an apps file)",
            ]
        )
    }

    @Test func partialSingleAppConfiguration() {
        var environment = singleApp
        environment["APNS_KEY_ID"] = nil
        environment["TOPIC"] = "  "
        let lines = problems(environment)
        #expect(lines.count == 2)
        #expect(lines[0].hasPrefix("APNS_KEY_ID is not set"))
        #expect(lines[1].hasPrefix("TOPIC is not set"))
    }

    @Test func badValuesAreNamedWithoutEchoingTheKey() {
        let secretBody = "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgAAAAAAAAAAAAAAAA"
        let lines = problems([
            "APNS_AUTH_KEY": "-----BEGIN PRIVATE KEY-----\n\(secretBody)\n-----END PRIVATE KEY-----",
            "APNS_KEY_ID": "abc", "APPLE_TEAM_ID": "DEF123GHIJ", "TOPIC": "com.example app",
        ])
        #expect(
            lines == [
                "APNS_KEY_ID=abc is not valid: use the 10 capital letters and digits of the Key ID",
                "APNS_AUTH_KEY is not a P-256 private key in PEM form: use the whole AuthKey_<KEYID>.p8 file, -----BEGIN PRIVATE KEY----- to -----END PRIVATE KEY-----",
                "TOPIC=com.example app is not a bundle ID: use letters, digits, '.', '-' and '_', e.g. com.example.app",
            ]
        )
        #expect(!lines.joined().contains(secretBody))
        #expect(!lines.joined().contains("MIGHAgEA"))
    }

    @Test func bothKeyVariables() {
        var environment = singleApp
        environment["APNS_AUTH_KEY_FILE"] = "/k.p8"
        #expect(problems(environment) == ["APNS_AUTH_KEY and APNS_AUTH_KEY_FILE are both set: keep only one"])
    }

    @Test func appsFile() throws {
        let file = """
            {"apps": [
              {"bundle_id": "com.example.one", "team_id": "DEF123GHIJ", "key_id": "ABC123DEFG",
               "key_file": "AuthKey_ABC123DEFG.p8", "environment": "production"},
              {"bundle_id": "com.example.one", "team_id": "DEF123GHIJ", "key_id": "ABC123DEFG",
               "key": \(JSONText.quote(Fixtures.p8)), "environment": "sandbox"},
              {"bundle_id": "com.example.two", "certificate_file": "/certs/push.pem",
               "certificate_key_file": "push-key.pem"}
            ]}
            """
        let apps = try APNSAppConfiguration.load(
            environment: ["HERALD_APPS_FILE": "/etc/herald/apps.json"],
            readFile: reader([
                "/etc/herald/apps.json": file,
                "/etc/herald/AuthKey_ABC123DEFG.p8": Fixtures.p8,
                "/certs/push.pem": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
                "/etc/herald/push-key.pem": "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n",
            ])
        )
        #expect(apps.map(\.bundleID) == ["com.example.one", "com.example.one", "com.example.two"])
        #expect(apps.map(\.environment) == [.production, .sandbox, nil])
        guard case .certificate(let certificate, let key) = apps[2].credentials else {
            Issue.record("expected a certificate")
            return
        }
        #expect(certificate.hasPrefix("-----BEGIN CERTIFICATE-----"))
        #expect(key.contains("MIIE"))
        #expect(!apps[2].description.contains("MIIE"))
    }

    @Test func appsFileAndSingleAppTogether() throws {
        var environment = singleApp
        environment["HERALD_APPS_FILE"] = "/apps.json"
        let file =
            #"{"apps":[{"bundle_id":"com.example.other","team_id":"DEF123GHIJ","key_id":"ABC123DEFG","key_file":"/k.p8"}]}"#
        let apps = try APNSAppConfiguration.load(
            environment: environment,
            readFile: reader(["/apps.json": file, "/k.p8": Fixtures.p8])
        )
        #expect(apps.map(\.bundleID) == [Fixtures.bundleID, "com.example.other"])
    }

    @Test func appsFileProblemsNameTheField() {
        let file = """
            {"apps": [
              {"bundle_id": "com.example.one", "keyid": "X", "key_file": "missing.p8", "environment": "staging"},
              {"team_id": "DEF123GHIJ", "key_id": "ABC123DEFG", "key": "-----BEGIN PRIVATE KEY-----\\nU0VDUkVU\\n-----END PRIVATE KEY-----"},
              {"bundle_id": "com.example.two", "key": "x", "certificate_file": "c.pem", "certificate_key_file": "k.pem"},
              {"bundle_id": "com.example.three", "certificate_file": "c.pem", "key_id": "ABC123DEFG"},
              "nope",
              {"bundle_id": 5, "key_id": "ABC123DEFG", "team_id": "DEF123GHIJ", "key": ""}
            ], "extra": 1}
            """
        let lines = problems(["HERALD_APPS_FILE": "/apps.json"], files: ["/apps.json": file, "/c.pem": "not pem"])
        #expect(
            lines == [
                "HERALD_APPS_FILE field extra is not known: the file has one field, apps",
                "HERALD_APPS_FILE apps[0].keyid is not a known field: use bundle_id, certificate_file, certificate_key_file, cloudkit, environment, key, key_file, key_id, team_id",
                "HERALD_APPS_FILE apps[0].environment=staging is not valid: use production or sandbox (or omit it for both)",
                "HERALD_APPS_FILE apps[0].key_file=missing.p8 cannot be read: set it to the path of the .p8 key file",
                "HERALD_APPS_FILE apps[0].key_id is missing: set it to the 10-character Key ID of the .p8 key",
                "HERALD_APPS_FILE apps[0].team_id is missing: set it to the 10-character Team ID",
                "HERALD_APPS_FILE apps[1].bundle_id is missing: set it to the app's bundle ID, e.g. com.example.app",
                "HERALD_APPS_FILE apps[1].key is not a P-256 private key in PEM form: use the whole AuthKey_<KEYID>.p8 file, -----BEGIN PRIVATE KEY----- to -----END PRIVATE KEY-----",
                "HERALD_APPS_FILE apps[2] has both a key and a certificate: keep key_file (or key) or certificate_file",
                "HERALD_APPS_FILE apps[3].key_id applies to token keys only: remove it for a certificate",
                "HERALD_APPS_FILE apps[3].certificate_key_file is missing: set it to the certificate's PEM key's path",
                "HERALD_APPS_FILE apps[3].certificate_file is not a PEM certificate: export it as PEM (-----BEGIN CERTIFICATE-----)",
                "HERALD_APPS_FILE apps[4] is not an object: write {\"bundle_id\": …, …}",
                "HERALD_APPS_FILE apps[5].bundle_id must be a non-empty string",
                "HERALD_APPS_FILE apps[5].key must be a non-empty string",
            ]
        )
        #expect(!lines.joined().contains("U0VDUkVU"))
    }

    @Test func unreadableOrMalformedAppsFile() {
        #expect(
            problems(["HERALD_APPS_FILE": "/nope.json"]) == [
                "HERALD_APPS_FILE=/nope.json cannot be read: set it to the path of the apps JSON file"
            ]
        )
        #expect(
            problems(["HERALD_APPS_FILE": "/a.json"], files: ["/a.json": "{apps: []"])
                == ["HERALD_APPS_FILE=/a.json is not a JSON object: write {\"apps\": [{\"bundle_id\": …}, …]}"]
        )
        #expect(
            problems(["HERALD_APPS_FILE": "/a.json"], files: ["/a.json": #"{"apps": []}"#])
                == ["HERALD_APPS_FILE apps is missing or empty: list at least one app as {\"bundle_id\": …}"]
        )
    }

    @Test func duplicateAppsAreRefused() {
        let file = """
            {"apps": [
              {"bundle_id": "com.example.app", "team_id": "DEF123GHIJ", "key_id": "ABC123DEFG", "key_file": "/k.p8", "environment": "sandbox"}
            ]}
            """
        var environment = singleApp
        environment["HERALD_APPS_FILE"] = "/apps.json"
        #expect(
            problems(environment, files: ["/apps.json": file, "/k.p8": Fixtures.p8])
                == [
                    "com.example.app is configured twice for the same environment: keep one entry per bundle ID and environment"
                ]
        )
    }
}

@Suite struct EndpointTests {
    @Test func applesHostsByDefault() throws {
        let endpoints = try APNSEndpoints.load(environment: [:])
        #expect(endpoints.push(.production) == APNSEndpoint(host: "api.push.apple.com", port: 443))
        #expect(endpoints.push(.sandbox) == APNSEndpoint(host: "api.sandbox.push.apple.com", port: 443))
        #expect(
            endpoints.management(.production) == APNSEndpoint(host: "api-manage-broadcast.push.apple.com", port: 2196)
        )
        #expect(
            endpoints.management(.sandbox)
                == APNSEndpoint(host: "api-manage-broadcast.sandbox.push.apple.com", port: 2195)
        )
        #expect(endpoints.caFile == nil)
        #expect(endpoints.push(.production).authority == "api.push.apple.com")
        #expect(endpoints.management(.sandbox).authority == "api-manage-broadcast.sandbox.push.apple.com:2195")
        #expect(endpoints.push(.production).scheme == "https")
    }

    @Test func overrides() throws {
        let endpoints = try APNSEndpoints.load(
            environment: [
                "APNS_PRODUCTION_URL": "https://127.0.0.1:8443", "APNS_SANDBOX_URL": "http://localhost:8080/",
                "APNS_MANAGEMENT_PRODUCTION_URL": "https://[::1]:9443",
                "APNS_MANAGEMENT_SANDBOX_URL": "https://sim.test",
                "APNS_CA_FILE": "/ca.pem",
            ],
            fileExists: { $0 == "/ca.pem" }
        )
        #expect(endpoints.production == APNSEndpoint(host: "127.0.0.1", port: 8443))
        #expect(endpoints.sandbox == APNSEndpoint(host: "localhost", port: 8080, usesTLS: false))
        #expect(endpoints.managementProduction == APNSEndpoint(host: "::1", port: 9443))
        #expect(endpoints.managementProduction.authority == "[::1]:9443")
        #expect(endpoints.managementSandbox == APNSEndpoint(host: "sim.test", port: 443))
        #expect(endpoints.caFile == "/ca.pem")
    }

    @Test func badOverridesAreReportedOneLineEach() {
        do {
            _ = try APNSEndpoints.load(
                environment: [
                    "APNS_PRODUCTION_URL": "ftp://x", "APNS_SANDBOX_URL": "https://h/path",
                    "APNS_MANAGEMENT_PRODUCTION_URL": "https://h:70000", "APNS_CA_FILE": "/missing.pem",
                ],
                fileExists: { _ in false }
            )
            Issue.record("expected an error")
        } catch {
            #expect(
                error.problems == [
                    "APNS_PRODUCTION_URL=ftp://x is not valid: use https://HOST[:PORT] (http:// for a cleartext simulator)",
                    "APNS_SANDBOX_URL=https://h/path is not valid: use https://HOST[:PORT] (http:// for a cleartext simulator)",
                    "APNS_MANAGEMENT_PRODUCTION_URL=https://h:70000 is not valid: use https://HOST[:PORT] (http:// for a cleartext simulator)",
                    "APNS_CA_FILE=/missing.pem does not exist: set it to a PEM file of root certificates",
                ]
            )
        }
    }

    @Test func environmentNames() {
        #expect(APNSEnvironment(name: "Production") == .production)
        #expect(APNSEnvironment(name: "sandbox") == .sandbox)
        #expect(APNSEnvironment(name: "development") == .sandbox)
        #expect(APNSEnvironment(name: "prod") == nil)
    }
}
