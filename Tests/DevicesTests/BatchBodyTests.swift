import APNs
import Foundation
import HTTPRouting
import HeraldCore
import Testing

@testable import Devices

/// The batch answer is written by hand for speed; it must be the bytes the JSON encoder gives.
@Suite("Devices: the hand-written answers (batch, page, one device) are the encoder's, byte for byte")
struct BatchBodyTests {
    @Test("registered devices with every field set or missing, refusals with and without field and token")
    func sameBytes() throws {
        let at = Date(timeIntervalSince1970: 1_800_000_000.123)
        let full = Device(
            token: String(repeating: "ab", count: 32),
            app: "com.example.app",
            environment: .sandbox,
            userID: "user \"quoted\" / slash \u{1}",
            tags: ["beta", "ünïcode", "tab\there"],
            locale: "fr_FR",
            timezone: "Europe/Paris",
            appVersion: "1.2.3",
            platform: .ios,
            status: .invalid,
            invalidReason: "evicted",
            invalidAt: at,
            invalidRecordedAt: at,
            createdAt: at,
            updatedAt: at.addingTimeInterval(1),
            lastRegisteredAt: at
        )
        let bare = Device(
            token: String(repeating: "cd", count: 32),
            app: "com.example.app",
            environment: .production,
            createdAt: at,
            updatedAt: at,
            lastRegisteredAt: nil
        )
        let outcomes: [DeviceService.BatchOutcome] = [
            .registered(RegisteredDevice(device: full, created: true)),
            .refused(token: nil, .invalid("invalid_token", "the token is not hex", field: "devices[1].token")),
            .registered(RegisteredDevice(device: bare, created: false)),
            .refused(token: "ef", DeviceError(.tooLarge, code: "too_large", message: "big", field: nil)),
        ]
        let body = BatchBody(outcomes)
        let expected = HTTPResponse.json(body)
        let written = body.response
        #expect(written.status == expected.status)
        #expect(written.headers["Content-Type"] == "application/json")
        #expect(String(decoding: written.body, as: UTF8.self) == String(decoding: expected.body, as: UTF8.self))

        // A page of devices and one device are written the same way.
        for next in [nil, "cursor \"quoted\""] {
            let page = DeviceBody.page([full, bare], nextCursor: next)
            let encoded = HTTPResponse.json(
                PageBody("devices", [DeviceBody(full), DeviceBody(bare)], nextCursor: next)
            )
            #expect(String(decoding: page.body, as: UTF8.self) == String(decoding: encoded.body, as: UTF8.self))
        }
        let empty = DeviceBody.page([], nextCursor: nil)
        #expect(String(decoding: empty.body, as: UTF8.self) == #"{"devices":[],"next_cursor":null}"#)
        let one = DeviceBody(full).response(status: 201)
        #expect(one.status == 201)
        #expect(one.body == HTTPResponse.json(DeviceBody(full)).body)
    }
}
