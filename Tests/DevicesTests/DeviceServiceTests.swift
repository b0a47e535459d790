import APNs
import DatabaseTestSupport
import Devices
import Foundation
import HeraldCore
import HeraldCrypto
import Storage
import Testing

@Suite("Devices: input rules, defaults and batches")
struct DeviceServiceTests {
    static func apps() throws -> [APNSAppConfiguration] {
        let key = try APNSSigningKey(keyID: "DEVKEY0001", teamID: "DEVTEAM001", privateKey: P256PrivateKey())
        return [
            APNSAppConfiguration(bundleID: app, credentials: .token(key), preferredEnvironment: .sandbox),
            APNSAppConfiguration(bundleID: "com.example.prod", environment: .production, credentials: .token(key)),
        ]
    }

    func parse(_ json: String) throws(DeviceError) -> DeviceInput {
        try DeviceInput.parse(Array(json.utf8))
    }

    @Test("the body's rules: tags, timezone, platform, lengths, unknown fields, strict JSON")
    func inputRules() throws {
        let full = try parse(
            """
            {"app": "com.example.devices", "environment": "sandbox", "user_id": "u1", "tags": ["a", "b", "a"],
             "locale": "fr_FR", "timezone": "Europe/Paris", "app_version": "2.0", "platform": "visionos"}
            """
        )
        #expect(full.tags == ["a", "b"])
        #expect(full.platform == .visionos)
        #expect(full.environment == .sandbox)
        #expect(try parse("") == DeviceInput())
        #expect(try parse("{\"user_id\": null, \"tags\": null}") == DeviceInput())

        let cases: [(String, String, String?)] = [
            ("{\"tags\": [\(Array(repeating: "\"x\"", count: 51).joined(separator: ","))]}", "too_many_tags", "tags"),
            ("{\"tags\": [\"\"]}", "invalid_tag", "tags[0]"),
            ("{\"tags\": [\"\(String(repeating: "é", count: 65))\"]}", "invalid_tag", "tags[0]"),
            ("{\"tags\": [1]}", "invalid_tag", "tags[0]"),
            ("{\"timezone\": \"Mars/Olympus\"}", "invalid_timezone", "timezone"),
            ("{\"timezone\": \"CEST\"}", "invalid_timezone", "timezone"),
            ("{\"platform\": \"android\"}", "invalid_platform", "platform"),
            ("{\"environment\": \"staging\"}", "invalid_environment", "environment"),
            ("{\"user_id\": \"\(String(repeating: "u", count: 256))\"}", "invalid_user_id", "user_id"),
            ("{\"user_id\": \"\"}", "invalid_user_id", "user_id"),
            ("{\"app_version\": 3}", "invalid_app_version", "app_version"),
            ("{\"token\": \"ab\"}", "unknown_field", "token"),
            ("{\"tags\": [\"a\"],}", "invalid_json", "tags"),
            ("{\"tags\": [\"a\"], \"tags\": []}", "duplicate_key", "tags"),
            ("[1]", "invalid_json", nil),
        ]
        for (body, code, field) in cases {
            do {
                _ = try parse(body)
                Issue.record("accepted \(body)")
            } catch {
                #expect(error.code == code, "\(body)")
                #expect(error.field == field, "\(body)")
                #expect(error.kind == .invalid)
            }
        }
        #expect(throws: DeviceError.self) {
            try DeviceInput.parse(Array("{\"user_id\": \"u\"}".utf8), allowUserID: false)
        }
        #expect(throws: DeviceError.self) { try DeviceInput.token("abc") }
        #expect(try DeviceInput.token(String(repeating: "AB", count: 32)) == String(repeating: "ab", count: 32))
    }

    @Test("app and environment default exactly as /v1/notifications resolves them", arguments: [Backend.sqliteMemory])
    func defaults(backend: Backend) async throws {
        try await withDevices(backend) { store, _ in
            let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))
            let service = DeviceService(store: store, apps: try Self.apps(), clock: clock)
            let first = try await service.register(token: token(1), DeviceInput())
            #expect(first.created)
            #expect(first.device.app == app)
            #expect(first.device.environment == .sandbox)
            #expect(first.device.lastRegisteredAt == clock.now())
            let prod = try await service.register(token: token(1), DeviceInput(app: "com.example.prod"))
            #expect(prod.device.environment == .production)
            #expect(prod.created)
            do {
                _ = try await service.register(
                    token: token(1),
                    DeviceInput(app: "com.example.prod", environment: .sandbox)
                )
                Issue.record("an environment the app does not serve was accepted")
            } catch let error as DeviceError {
                #expect(error.code == "invalid_environment")
                #expect(error.message == "com.example.prod is not configured for sandbox: use production")
            }
            do {
                _ = try await service.device(token: token(1), app: "com.example.other", environment: nil)
                Issue.record("an unknown app was accepted")
            } catch let error as DeviceError {
                #expect(error.code == "unknown_app")
            }
            let unconfigured = DeviceService(store: store, apps: [])
            do {
                _ = try await unconfigured.register(token: token(1), DeviceInput())
                Issue.record("registered without an app")
            } catch let error as DeviceError {
                #expect(error.kind == .unavailable)
                #expect(error.code == "apns_not_configured")
            }
            await #expect(throws: DeviceError.notFound(app: app, environment: .production)) {
                try await service.delete(token: token(1), app: nil, environment: .production)
            }
            try await service.delete(token: token(1), app: nil, environment: nil)
        }
    }

    @Test("a batch stores its valid devices in one go and refuses the others one by one", arguments: Backend.allCases)
    func batch(backend: Backend) async throws {
        try await withDevices(backend) { store, _ in
            let service = DeviceService(store: store, apps: try Self.apps())
            _ = try await service.register(token: token(2), DeviceInput(userID: "before"))
            var devices: [[String: Any]] = (1...5).map { ["token": token($0), "user_id": "u\($0)", "tags": ["t"]] }
            devices.append(["token": "xyz"])
            devices.append(["token": token(6), "platform": "android"])
            devices.append(["token": token(1)])
            devices.append(["user_id": "no token"])
            devices.append(["token": token(7), "app": "com.example.unknown"])
            let body = try JSONSerialization.data(withJSONObject: ["devices": devices])
            let outcomes = try await service.register(batch: try DeviceBatch.parse(Array(body)))
            #expect(outcomes.count == 10)
            var created: [String] = []
            var updated: [String] = []
            var refused: [Int: String] = [:]
            for (index, outcome) in outcomes.enumerated() {
                switch outcome {
                case .registered(let device):
                    if device.created {
                        created.append(device.device.token)
                    } else {
                        updated.append(device.device.token)
                    }
                case .refused(_, let error):
                    refused[index] = error.code
                }
            }
            #expect(created == [1, 3, 4, 5].map(token))
            #expect(updated == [token(2)])
            #expect(
                refused == [
                    5: "invalid_token", 6: "invalid_platform", 7: "duplicate_token", 8: "missing_token",
                    9: "unknown_app",
                ]
            )
            #expect(try await store.device(app: app, environment: .sandbox, token: token(2))?.userID == "u2")
            #expect(try await store.device(app: app, environment: .sandbox, token: token(6)) == nil)

            for bad in ["{}", "{\"devices\": []}", "{\"devices\": {}}", "{\"devices\": [], \"more\": 1}"] {
                #expect(throws: DeviceError.self) { try DeviceBatch.parse(Array(bad.utf8)) }
            }
            let tooMany = try JSONSerialization.data(
                withJSONObject: ["devices": (0...1_000).map { ["token": token($0)] }]
            )
            do {
                _ = try DeviceBatch.parse(Array(tooMany))
                Issue.record("1,001 devices accepted")
            } catch let error as DeviceError {
                #expect(error.kind == .tooLarge)
                #expect(error.code == "too_many_devices")
            }
        }
    }
}
