public import APNs
import Foundation
public import HeraldCore

/// Registers, reads, lists and deletes devices for the `/v1/devices` routes (and the app-facing
/// ones): resolves the app and environment as `/v1/notifications` does and stamps every
/// registration with the request time on ``clock`` (the time the dead-token rule compares with
/// APNs' 410 timestamp).
///
/// ```swift
/// let service = DeviceService(store: DeviceStore(database: db), apps: apps)
/// let token = try DeviceInput.token(pathToken)
/// let result = try await service.register(token: token, try DeviceInput.parse(body))
/// ```
public struct DeviceService: Sendable {
    public let store: DeviceStore
    /// The configured apps; the first is the default.
    public let apps: [APNSAppConfiguration]
    public let clock: any HeraldClock

    public init(store: DeviceStore, apps: [APNSAppConfiguration], clock: any HeraldClock = SystemClock()) {
        self.store = store
        self.apps = apps
        self.clock = clock
    }

    /// The app and environment a request means, as `/v1/notifications` resolves them.
    public func resolve(app: String?, environment: APNSEnvironment?) throws(DeviceError) -> (String, APNSEnvironment) {
        do {
            let (resolved, environment) = try APNSAppConfiguration.resolve(in: apps, app: app, environment: environment)
            return (resolved.bundleID, environment)
        } catch {
            throw DeviceError(error)
        }
    }

    /// Registers one device (`token` already checked with ``DeviceInput/token(_:field:)``).
    public func register(token: String, _ input: DeviceInput) async throws -> RegisteredDevice {
        let registration = try registration(token: token, input, at: clock.now())
        guard let result = try await store.register([registration]).first else {
            throw DeviceError.notFound(app: registration.app, environment: registration.environment)
        }
        return result
    }

    /// What one entry of a batch came to.
    public enum BatchOutcome: Sendable, Hashable {
        case registered(RegisteredDevice)
        case refused(token: String?, DeviceError)
    }

    /// Registers every valid entry of a batch in one transaction; invalid entries (and entries
    /// repeating an earlier device) are refused one by one and the rest stored.
    public func register(batch entries: [DeviceBatch.Entry]) async throws -> [BatchOutcome] {
        let now = clock.now()
        var outcomes: [BatchOutcome?] = Array(repeating: nil, count: entries.count)
        var valid: [(index: Int, registration: DeviceRegistration)] = []
        var seen = Set<DeviceKey>()
        for (index, entry) in entries.enumerated() {
            switch entry {
            case .failure(let refusal):
                outcomes[index] = .refused(token: refusal.token, refusal.error)
            case .success(let item):
                do {
                    let registration = try registration(token: item.token, item.input, at: now)
                    guard seen.insert(DeviceKey(registration)).inserted else {
                        outcomes[index] = .refused(
                            token: item.token,
                            .invalid(
                                "duplicate_token",
                                "devices[\(index)] repeats an earlier device of this batch: list each device once",
                                field: "devices[\(index)].token"
                            )
                        )
                        continue
                    }
                    valid.append((index, registration))
                } catch {
                    var error = error
                    error.field = "devices[\(index)]." + (error.field ?? "")
                    outcomes[index] = .refused(token: item.token, error)
                }
            }
        }
        let stored = try await store.register(valid.map(\.registration))
        for (position, item) in valid.enumerated() where position < stored.count {
            outcomes[item.index] = .registered(stored[position])
        }
        return outcomes.map {
            $0 ?? .refused(token: nil, .invalid("not_stored", "the device was not stored", field: nil))
        }
    }

    /// The device, resolved as ``resolve(app:environment:)`` does.
    ///
    /// - Throws: ``DeviceError`` not found.
    public func device(token: String, app: String?, environment: APNSEnvironment?) async throws -> Device {
        let (app, environment) = try resolve(app: app, environment: environment)
        guard let device = try await store.device(app: app, environment: environment, token: token) else {
            throw DeviceError.notFound(app: app, environment: environment)
        }
        return device
    }

    /// Deletes the device and its tags; with `owner`, only a device registered to that user.
    ///
    /// - Throws: ``DeviceError`` not found, the same for an unknown device and another user's.
    public func delete(
        token: String,
        app: String?,
        environment: APNSEnvironment?,
        ownedBy owner: String? = nil
    ) async throws {
        let (app, environment) = try resolve(app: app, environment: environment)
        guard try await store.delete(app: app, environment: environment, token: token, ownedBy: owner) else {
            throw DeviceError.notFound(app: app, environment: environment)
        }
    }

    /// Devices in token order, filtered, a page at a time.
    public func list(
        app: String?,
        environment: APNSEnvironment?,
        userID: String? = nil,
        tag: String? = nil,
        status: DeviceStatus? = nil,
        tokenPrefix: String? = nil,
        limit: Int,
        cursor: String?
    ) async throws -> Page<Device> {
        let (app, environment) = try resolve(app: app, environment: environment)
        return try await store.list(
            DeviceListQuery(
                app: app,
                environment: environment,
                userID: userID,
                tag: tag,
                status: status,
                tokenPrefix: tokenPrefix,
                limit: limit,
                cursor: cursor
            )
        )
    }

    private func registration(
        token: String,
        _ input: DeviceInput,
        at now: Date
    ) throws(DeviceError) -> DeviceRegistration {
        let (app, environment) = try resolve(app: input.app, environment: input.environment)
        return DeviceRegistration(
            token: token,
            app: app,
            environment: environment,
            userID: input.userID,
            tags: input.tags,
            locale: input.locale,
            timezone: input.timezone,
            appVersion: input.appVersion,
            platform: input.platform,
            registeredAt: now
        )
    }
}

/// `POST /v1/devices/batch`: `{"devices": [{"token": "…", …device fields}, …]}`, 1 to
/// ``DeviceLimits/maximumBatch`` entries, each checked on its own.
public enum DeviceBatch {
    /// A valid entry: its token and body.
    public struct Item: Sendable, Hashable {
        public var token: String
        public var input: DeviceInput
    }

    /// An entry refused before it was stored, with its token when it had a valid one.
    public struct Refusal: Error, Sendable, Hashable {
        public var token: String?
        public var error: DeviceError
    }

    public typealias Entry = Result<Item, Refusal>

    /// Parses the body; an error in one entry refuses that entry only.
    ///
    /// - Throws: ``DeviceError`` for a body that is not a batch at all.
    public static func parse(_ body: [UInt8]) throws(DeviceError) -> [Entry] {
        guard body.count <= DeviceLimits.maximumBatchBodyBytes else {
            throw DeviceError(
                .tooLarge,
                code: "body_too_large",
                message: "the body is \(body.count) bytes: send at most \(DeviceLimits.maximumBatchBodyBytes) "
                    + "(split the devices over several batches)"
            )
        }
        var object = try DeviceInput.Reader(
            body: body,
            maximumDepth: DeviceLimits.maximumDepth,
            what: "a batch",
            example: "{\"devices\": [{\"token\": \"…\"}]}"
        )
        try object.rejectUnknown(["devices"], hint: "send {\"devices\": […]}")
        guard case .array(let devices)? = object.value("devices") else {
            throw .invalid("invalid_devices", "devices must be an array of device objects", field: "devices")
        }
        guard (1...DeviceLimits.maximumBatch).contains(devices.count) else {
            throw DeviceError(
                devices.isEmpty ? .invalid : .tooLarge,
                code: devices.isEmpty ? "invalid_devices" : "too_many_devices",
                message: "devices has \(devices.count) entries: send 1 to \(DeviceLimits.maximumBatch) per batch",
                field: "devices"
            )
        }
        var entries: [Entry] = []
        entries.reserveCapacity(devices.count)
        for (index, element) in devices.enumerated() { entries.append(entry(element, index: index)) }
        return entries
    }

    private static func entry(_ element: JSONValue, index: Int) -> Entry {
        let field = "devices[\(index)]"
        guard case .object(let members) = element else {
            return .failure(
                Refusal(token: nil, error: .invalid("invalid_device", "\(field) must be an object", field: field))
            )
        }
        var entry = DeviceInput.Reader(members: members, path: field, what: "a device")
        guard case .string(let text)? = entry.value("token") else {
            let error = DeviceError.invalid(
                "missing_token",
                "\(field).token is missing: give the device token",
                field: entry.field("token")
            )
            return .failure(Refusal(token: nil, error: error))
        }
        let token: String
        do {
            token = try DeviceInput.token(text, field: entry.field("token"))
        } catch {
            return .failure(Refusal(token: nil, error: error))
        }
        do {
            let input = try DeviceInput.parse(&entry, extraFields: ["token"])
            return .success(Item(token: token, input: input))
        } catch {
            return .failure(Refusal(token: token, error: error))
        }
    }
}
