import Foundation
import HeraldCore
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Issue 33, item 2: ids a client can see tell nothing about other ids. Against a real
/// `herald serve`: the ids of 1,000 notifications are UUIDv7 whose random bits are drawn per id,
/// and share none with the request ids Herald answers with (which `/healthz` shows anyone).
@Suite("hostile client: unguessable ids")
struct HostileIDTests {
    @Test("1,000 resource ids share no random bits with each other or with request ids")
    func resourceIDsAreUnguessable() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-ids-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = "hostile-ids-key-0123456789"
        let herald = try HeraldProcess(
            arguments: ["serve", "--simulator", "--host", "127.0.0.1", "--port", "0"],
            environment: [
                "DATABASE_URL": "sqlite:\(directory.path)/herald.sqlite", "TOPIC": "org.example.ids",
                "HERALD_API_KEYS": key,
            ]
        )
        let port = try await herald.listeningPort()
        let base = "http://127.0.0.1:\(port)"
        let token = String(repeating: "ab", count: 32)
        // Scheduled an hour ahead: each is a durable resource, none is sent during the test.
        let sendAt = Int(Date().timeIntervalSince1970) + 3_600
        let body = #"{"tokens":["\#(token)"],"payload":{"aps":{"alert":"Hi"}},"send_at":\#(sendAt)}"#
        let created = try await withThrowingTaskGroup(of: [(id: UUID, requestID: String)].self) { group in
            for worker in 0..<8 {
                group.addTask {
                    var made: [(id: UUID, requestID: String)] = []
                    for _ in stride(from: worker, to: 1_000, by: 8) {
                        var request = URLRequest(url: URL(string: "\(base)/v1/notifications")!)
                        request.httpMethod = "POST"
                        request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization")
                        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
                        request.httpBody = Data(body.utf8)
                        let (data, response) = try await URLSession.shared.data(for: request)
                        let http = try #require(response as? HTTPURLResponse)
                        try #require(http.statusCode == 202, "\(String(decoding: data, as: UTF8.self))")
                        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
                        let id = try #require((json["id"] as? String).flatMap(RequestIdentifier.uuid))
                        let requestID = try #require(http.value(forHTTPHeaderField: "X-Request-Id"))
                        made.append((id, requestID))
                    }
                    return made
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        #expect(created.count == 1_000)
        var requestIDs = created.map(\.requestID)
        var healthz = URLRequest(url: URL(string: "\(base)/healthz")!)
        healthz.httpMethod = "GET"
        let (_, health) = try await URLSession.shared.data(for: healthz)
        requestIDs.append(try #require((health as? HTTPURLResponse)?.value(forHTTPHeaderField: "X-Request-Id")))

        let ids = created.map(\.id)
        #expect(Set(ids).count == ids.count)
        for id in ids {
            #expect(id.uuid.6 >> 4 == 7, "not a UUIDv7: \(id)")
            #expect(id.uuid.8 >> 6 == 0b10, "not RFC 9562's variant: \(id)")
        }
        // Each of the 74 random bit positions takes both values among 1,000 ids: none is fixed
        // per process (the old ids' last 16 hex digits were), and no two ids share their 62 low bits.
        let random = ids.map { ResourceIdentifier.randomBits(of: $0) }
        #expect(random.reduce(UInt16(0)) { $0 | $1.a } == 0x0FFF)
        #expect(random.reduce(UInt16(0x0FFF)) { $0 & $1.a } == 0)
        #expect(random.reduce(UInt64(0)) { $0 | $1.b } == 0x3FFF_FFFF_FFFF_FFFF)
        #expect(random.reduce(UInt64(0x3FFF_FFFF_FFFF_FFFF)) { $0 & $1.b } == 0)
        #expect(Set(random.map(\.b)).count == ids.count)
        // Nothing of a request id is in a resource id: no 12-hex-digit run of one is in the other.
        let idText = ids.map { RequestIdentifier.lowercaseString($0).replacingOccurrences(of: "-", with: "") }
        var requestRuns: Set<Substring> = []
        for requestID in requestIDs {
            let hex = requestID.replacingOccurrences(of: "-", with: "")
            let digits = Array(hex)
            for start in stride(from: 12, through: digits.count - 12, by: 1) {
                requestRuns.insert(Substring(String(digits[start..<start + 12])))
            }
        }
        // From the 13th hex digit on, an id is random (the first 12 are the time in milliseconds).
        let shared = idText.filter { text in
            let digits = Array(text)
            return stride(from: 12, through: digits.count - 12, by: 1).contains {
                requestRuns.contains(Substring(String(digits[$0..<$0 + 12])))
            }
        }
        #expect(shared.isEmpty, "resource ids sharing 12 hex digits with a request id: \(shared.prefix(5))")
        herald.signal(SIGTERM)
        #expect(try await herald.waitForExit(timeout: .seconds(10)) == 0, "log:\n\(herald.log)")
    }
}
