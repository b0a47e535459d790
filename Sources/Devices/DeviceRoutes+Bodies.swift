import APNs
import Foundation
import HTTPRouting
import HeraldCore
import HeraldFeature

/// A device as the API shows it: every field present, `null` when unset.
public struct DeviceBody: Encodable, Sendable {
    var device: Device

    public init(_ device: Device) {
        self.device = device
    }

    enum CodingKeys: String, CodingKey {
        case token, app, environment, tags, locale, timezone, platform, status
        case userID = "user_id"
        case appVersion = "app_version"
        case invalidReason = "invalid_reason"
        case invalidAt = "invalid_at"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
        case lastRegisteredAt = "last_registered_at"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(device.token, forKey: .token)
        try container.encode(device.app, forKey: .app)
        try container.encode(device.environment.rawValue, forKey: .environment)
        try container.encode(device.userID, forKey: .userID)
        try container.encode(device.tags, forKey: .tags)
        try container.encode(device.locale, forKey: .locale)
        try container.encode(device.timezone, forKey: .timezone)
        try container.encode(device.appVersion, forKey: .appVersion)
        try container.encode(device.platform?.rawValue, forKey: .platform)
        try container.encode(device.status.rawValue, forKey: .status)
        try container.encode(device.invalidReason, forKey: .invalidReason)
        try container.encode(device.invalidAt, forKey: .invalidAt)
        try container.encode(device.createdAt, forKey: .createdAt)
        try container.encode(device.updatedAt, forKey: .updatedAt)
        try container.encode(device.lastRegisteredAt, forKey: .lastRegisteredAt)
    }
}

/// `POST /v1/devices/batch`'s answer: per device, in the order sent, `{"index", "status": 201 |
/// 200 | 4xx, "device"}` or `{"index", "status", "token"?, "error"}`, and the counts.
struct BatchBody: Encodable, Sendable {
    struct ErrorBody: Encodable, Sendable {
        var code: String
        var message: String
        var field: String?
    }

    struct Result: Encodable, Sendable {
        var index: Int
        var status: Int
        var token: String?
        var device: DeviceBody?
        var error: ErrorBody?
    }

    var results: [Result]
    var created: Int
    var updated: Int
    var failed: Int

    init(_ outcomes: [DeviceService.BatchOutcome]) {
        var results: [Result] = []
        results.reserveCapacity(outcomes.count)
        var created = 0
        var updated = 0
        var failed = 0
        for (index, outcome) in outcomes.enumerated() {
            switch outcome {
            case .registered(let registered):
                if registered.created { created += 1 } else { updated += 1 }
                results.append(
                    Result(
                        index: index,
                        status: registered.created ? 201 : 200,
                        token: registered.device.token,
                        device: DeviceBody(registered.device),
                        error: nil
                    )
                )
            case .refused(let token, let error):
                failed += 1
                results.append(
                    Result(
                        index: index,
                        status: error.httpStatus,
                        token: token,
                        device: nil,
                        error: ErrorBody(code: error.code, message: error.message, field: error.field)
                    )
                )
            }
        }
        self.results = results
        self.created = created
        self.updated = updated
        self.failed = failed
    }
}
