import APNs
import APNsSimulator
import CloudKit
import Foundation
import HeraldCore
import HeraldCrypto
import Testing

/// `CloudKitClient` against the simulator's CloudKit endpoints, over HTTP/2 with TLS.
@Suite struct CloudKitClientTests {
    static let container = CloudKitFixture.container

    @Test func createsARecordAndReadsItBack() async throws {
        try await withCloudKitSimulator { fixture in
            let client = try fixture.client()
            let record = try await client.createRecord(
                container: Self.container,
                environment: .development,
                recordType: "WakePing",
                fields: [
                    "ts": .int64(1_700_000_000), "note": .string("hi"),
                    "at": .timestamp(Date(timeIntervalSince1970: 5)),
                ]
            )
            #expect(!record.recordName.isEmpty)
            #expect(record.recordType == "WakePing")
            #expect(record.fields["ts"] == .int64(1_700_000_000))
            #expect(record.fields["note"] == .string("hi"))
            #expect(record.fields["at"] == .timestamp(Date(timeIntervalSince1970: 5)))
            let page = try await client.queryRecords(
                container: Self.container,
                environment: .development,
                recordType: "WakePing"
            )
            #expect(page.records.map(\.recordName) == [record.recordName])
            // Environments are separate databases.
            let production = try await client.queryRecords(
                container: Self.container,
                environment: .production,
                recordType: "WakePing"
            )
            #expect(production.records.isEmpty)
            await client.close()
        }
    }

    @Test func queriesSortAndFollowTheContinuationMarker() async throws {
        try await withCloudKitSimulator { fixture in
            let client = try fixture.client()
            for ts in [3, 1, 5, 2, 4] {
                _ = try await client.createRecord(
                    container: Self.container,
                    environment: .development,
                    recordType: "WakePing",
                    fields: ["ts": .int64(Int64(ts))]
                )
            }
            var seen: [Int64] = []
            var pages = 0
            var marker: String?
            repeat {
                let page = try await client.queryRecords(
                    container: Self.container,
                    environment: .development,
                    recordType: "WakePing",
                    sortBy: "ts",
                    ascending: false,
                    continuationMarker: marker,
                    limit: 2
                )
                pages += 1
                #expect(page.records.count <= 2)
                for record in page.records {
                    if case .int64(let ts)? = record.fields["ts"] { seen.append(ts) }
                }
                marker = page.continuationMarker
            } while marker != nil
            #expect(seen == [5, 4, 3, 2, 1])
            #expect(pages == 3)
            await client.close()
        }
    }

    @Test func cleanupKeepsTheNewestN() async throws {
        try await withCloudKitSimulator { fixture in
            let client = try fixture.client()
            for ts in 1...7 {
                _ = try await client.createRecord(
                    container: Self.container,
                    environment: .development,
                    recordType: "WakePing",
                    fields: ["ts": .int64(Int64(ts))]
                )
            }
            let deleted = try await client.cleanup(
                container: Self.container,
                environment: .development,
                recordType: "WakePing",
                sortField: "ts",
                keep: 3
            )
            #expect(deleted == 4)
            let left = try await client.queryRecords(
                container: Self.container,
                environment: .development,
                recordType: "WakePing",
                sortBy: "ts",
                ascending: false
            )
            #expect(left.records.map { $0.fields["ts"] } == [.int64(7), .int64(6), .int64(5)])
            let again = try await client.cleanup(
                container: Self.container,
                environment: .development,
                recordType: "WakePing",
                sortField: "ts",
                keep: 3
            )
            #expect(again == 0)
            await client.close()
        }
    }

    /// 250 names go out in two requests: the simulator, like CloudKit, refuses more than 200
    /// operations in one.
    @Test func deletesMoreThan200RecordsInBatches() async throws {
        try await withCloudKitSimulator { fixture in
            let client = try fixture.client()
            var names: [String] = []
            for index in 0..<250 {
                let record = try await client.createRecord(
                    container: Self.container,
                    environment: .development,
                    recordType: "Bulk",
                    fields: ["i": .int64(Int64(index))]
                )
                names.append(record.recordName)
            }
            let deleted = try await client.deleteRecords(
                container: Self.container,
                environment: .development,
                recordNames: names
            )
            #expect(deleted == 250)
            let left = try await client.queryRecords(
                container: Self.container,
                environment: .development,
                recordType: "Bulk"
            )
            #expect(left.records.isEmpty)
            await client.close()
        }
    }

    @Test func anUnknownKeyIsRefusedWith401AndNotRetried() async throws {
        try await withCloudKitSimulator { fixture in
            let clock = RecordingClock()
            let client = try fixture.client(
                signer: CloudKitSigner(keyID: "unknownkey", privateKey: fixture.privateKey),
                clock: clock
            )
            let error = await cloudKitError {
                try await client.queryRecords(
                    container: Self.container,
                    environment: .development,
                    recordType: "WakePing"
                )
            }
            #expect(error?.code == .authenticationFailed)
            #expect(error?.status == 401)
            #expect(error?.reason.contains("unknown key") == true)
            #expect(error?.isRetryable == false)
            #expect(clock.sleeps.isEmpty)
            await client.close()
        }
    }

    @Test func aBadSignatureIsRefusedWith401() async throws {
        try await withCloudKitSimulator { fixture in
            let impostor = CloudKitSigner(keyID: CloudKitFixture.keyID, privateKey: P256PrivateKey())
            let client = try fixture.client(signer: impostor)
            let error = await cloudKitError {
                try await client.createRecord(
                    container: Self.container,
                    environment: .development,
                    recordType: "WakePing",
                    fields: [:]
                )
            }
            #expect(error?.code == .authenticationFailed)
            #expect(error?.reason.contains("bad signature") == true)
            await client.close()
        }
    }

    @Test func aDateMoreThanFiveMinutesOffIsRefusedWith401() async throws {
        try await withCloudKitSimulator { fixture in
            let skewed = try fixture.client(clock: RecordingClock(offset: 6 * 60))
            let error = await cloudKitError {
                try await skewed.queryRecords(
                    container: Self.container,
                    environment: .development,
                    recordType: "WakePing"
                )
            }
            #expect(error?.code == .authenticationFailed)
            #expect(error?.reason.contains("5 minutes") == true)
            let behind = try fixture.client(clock: RecordingClock(offset: -6 * 60))
            let late = await cloudKitError {
                try await behind.queryRecords(
                    container: Self.container,
                    environment: .development,
                    recordType: "WakePing"
                )
            }
            #expect(late?.code == .authenticationFailed)
            // Within the window is fine.
            let close = try fixture.client(clock: RecordingClock(offset: 4 * 60))
            _ = try await close.queryRecords(
                container: Self.container,
                environment: .development,
                recordType: "WakePing"
            )
            await skewed.close()
            await behind.close()
            await close.close()
        }
    }

    @Test func throttledIsRetriedAfterRetryAfter() async throws {
        try await withCloudKitSimulator { fixture in
            let added = try await fixture.control(
                "POST",
                "/cloudkit/faults",
                body: #"{"server_error_code":"THROTTLED","retry_after":3,"times":1}"#
            )
            #expect(added.status == 201)
            let clock = RecordingClock()
            let client = try fixture.client(clock: clock)
            let record = try await client.createRecord(
                container: Self.container,
                environment: .development,
                recordType: "WakePing",
                fields: ["ts": .int64(1)]
            )
            #expect(!record.recordName.isEmpty)
            #expect(clock.sleeps == [.seconds(3)])
            await client.close()
        }
    }

    @Test func persistentThrottlingIsSurfacedWithItsRetryAfter() async throws {
        try await withCloudKitSimulator { fixture in
            _ = try await fixture.control(
                "POST",
                "/cloudkit/faults",
                body: #"{"server_error_code":"THROTTLED","retry_after":2}"#
            )
            let clock = RecordingClock()
            let client = try fixture.client(clock: clock, attempts: 3)
            let error = await cloudKitError {
                try await client.queryRecords(
                    container: Self.container,
                    environment: .development,
                    recordType: "WakePing"
                )
            }
            #expect(error?.code == .throttled)
            #expect(error?.status == 429)
            #expect(error?.retryAfter == .seconds(2))
            #expect(error?.isRetryable == true)
            #expect(clock.sleeps == [.seconds(2), .seconds(2)])
            let faults = try await fixture.control("GET", "/cloudkit/faults")
            #expect(faults.json?["faults"]?[0]?["fired"] == 3)
            await client.close()
        }
    }

    @Test func tryAgainLaterWithoutRetryAfterBacksOff() async throws {
        try await withCloudKitSimulator { fixture in
            _ = try await fixture.control(
                "POST",
                "/cloudkit/faults",
                body: #"{"server_error_code":"TRY_AGAIN_LATER","times":2,"operation":"query"}"#
            )
            let clock = RecordingClock()
            let client = try fixture.client(clock: clock)
            _ = try await client.queryRecords(
                container: Self.container,
                environment: .development,
                recordType: "WakePing"
            )
            #expect(clock.sleeps.count == 2)
            #expect(clock.sleeps.allSatisfy { $0 > .zero })
            await client.close()
        }
    }

    @Test func aRecordLevelErrorIsAnError() async throws {
        try await withCloudKitSimulator { fixture in
            let client = try fixture.client()
            var fields: [String: CloudKitValue] = [:]
            for index in 0..<201 { fields["f\(index)"] = .int64(Int64(index)) }
            let error = await cloudKitError {
                try await client.createRecord(
                    container: Self.container,
                    environment: .development,
                    recordType: "WakePing",
                    fields: fields
                )
            }
            #expect(error?.code == .badRequest)
            #expect(error?.recordName != nil)
            #expect(error?.isRetryable == false)
            await client.close()
        }
    }
}

extension APNSJSONValue {
    fileprivate subscript(index: Int) -> APNSJSONValue? {
        guard case .array(let items) = self, items.indices.contains(index) else { return nil }
        return items[index]
    }
}
