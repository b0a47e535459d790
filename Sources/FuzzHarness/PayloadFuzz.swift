import APNs
import Foundation
import Notifications

/// Target `payload`: the APNs payload checks on arbitrary bytes — the JSON syntax check, the
/// JSON value parser, the per-push-type validation — and the same bytes as a `/v1` payload.
public enum PayloadFuzz {
    static let token = String(repeating: "ab", count: 32)
    static let now = Date(timeIntervalSince1970: 1_900_000_000)

    public static func run(_ data: [UInt8]) {
        _ = APNSJSONSyntax.isValid(data)
        _ = try? APNSJSONValue(parsing: data)
        for pushType in [APNSPushType.alert, .background, .liveActivity, .voip, .complication] {
            let request = APNSRequest(
                deviceToken: token,
                pushType: pushType,
                topic: .explicit("com.example.fuzz"),
                payload: data
            )
            _ = try? request.validate()
        }
        var body = Array(#"{"tokens":["\#(token)"],"payload":"#.utf8)
        body += data
        body.append(UInt8(ascii: "}"))
        _ = try? NotificationRequest.parse(body, now: now)
    }
}
