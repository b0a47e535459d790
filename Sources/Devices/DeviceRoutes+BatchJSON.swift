import APNs
import Foundation
import HTTPRouting
import HeraldCore

/// `POST /v1/devices/batch`'s answer (and a page of devices, and one device) written by hand: the bytes ``HTTPResponse/json(_:status:)``
/// gives (keys sorted, `null` for a device's missing fields, a result's missing fields left out,
/// RFC 3339 dates), without a `JSONEncoder` walk over 1,000 devices of 15 fields each, which was
/// the largest part of a batch's cost in Herald (docs/PERFORMANCE.md, "Importing devices").
extension BatchBody {
    var response: HTTPResponse {
        var out: [UInt8] = []
        out.reserveCapacity(64 + results.count * 420)
        out += Array("{\"created\":\(created),\"failed\":\(failed),\"results\":[".utf8)
        for (position, result) in results.enumerated() {
            if position > 0 { out.append(UInt8(ascii: ",")) }
            result.write(to: &out)
        }
        out += Array("],\"updated\":\(updated)}".utf8)
        return HTTPResponse(status: 200, headers: ["Content-Type": "application/json"], body: out)
    }
}

extension BatchBody.Result {
    func write(to out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        if let device {
            out += Array("\"device\":".utf8)
            device.write(to: &out)
            out.append(UInt8(ascii: ","))
        }
        if let error {
            out += Array("\"error\":{\"code\":".utf8)
            JSONText.append(quoted: error.code, to: &out)
            if let field = error.field {
                out += Array(",\"field\":".utf8)
                JSONText.append(quoted: field, to: &out)
            }
            out += Array(",\"message\":".utf8)
            JSONText.append(quoted: error.message, to: &out)
            out += Array("},".utf8)
        }
        out += Array("\"index\":\(index),\"status\":\(status)".utf8)
        if let token {
            out += Array(",\"token\":".utf8)
            JSONText.append(quoted: token, to: &out)
        }
        out.append(UInt8(ascii: "}"))
    }
}

extension DeviceBody {
    /// A page of devices, `{"devices": [...], "next_cursor": "…" | null}`, written as the batch's
    /// answer is: the bytes ``HTTPResponse/json(_:status:)`` gives for the ``PageBody``.
    static func page(_ devices: [Device], nextCursor: String?) -> HTTPResponse {
        var out: [UInt8] = []
        out.reserveCapacity(48 + devices.count * 420)
        out += Array("{\"devices\":[".utf8)
        for (position, device) in devices.enumerated() {
            if position > 0 { out.append(UInt8(ascii: ",")) }
            DeviceBody(device).write(to: &out)
        }
        out += Array("],\"next_cursor\":".utf8)
        if let nextCursor { JSONText.append(quoted: nextCursor, to: &out) } else { out += Array("null".utf8) }
        out.append(UInt8(ascii: "}"))
        return HTTPResponse(status: 200, headers: ["Content-Type": "application/json"], body: out)
    }

    /// The device as an answer, written by ``write(to:)``.
    func response(status: Int = 200) -> HTTPResponse {
        var out: [UInt8] = []
        out.reserveCapacity(420)
        write(to: &out)
        return HTTPResponse(status: status, headers: ["Content-Type": "application/json"], body: out)
    }

    /// The device's object, keys in sorted order as ``encode(to:)`` with sorted keys gives them.
    func write(to out: inout [UInt8]) {
        func key(_ name: String, first: Bool = false) {
            out += Array(((first ? "{\"" : ",\"") + name + "\":").utf8)
        }
        func string(_ value: String?) {
            if let value { JSONText.append(quoted: value, to: &out) } else { out += Array("null".utf8) }
        }
        func date(_ value: Date?) {
            string(value.map { RFC3339.string(from: $0) })
        }
        key("app", first: true)
        string(device.app)
        key("app_version")
        string(device.appVersion)
        key("created_at")
        date(device.createdAt)
        key("environment")
        string(device.environment.rawValue)
        key("invalid_at")
        date(device.invalidAt)
        key("invalid_reason")
        string(device.invalidReason)
        key("last_registered_at")
        date(device.lastRegisteredAt)
        key("locale")
        string(device.locale)
        key("platform")
        string(device.platform?.rawValue)
        key("status")
        string(device.status.rawValue)
        key("tags")
        out.append(UInt8(ascii: "["))
        for (position, tag) in device.tags.enumerated() {
            if position > 0 { out.append(UInt8(ascii: ",")) }
            JSONText.append(quoted: tag, to: &out)
        }
        out.append(UInt8(ascii: "]"))
        key("timezone")
        string(device.timezone)
        key("token")
        string(device.token)
        key("updated_at")
        date(device.updatedAt)
        key("user_id")
        string(device.userID)
        out.append(UInt8(ascii: "}"))
    }
}
