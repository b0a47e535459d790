import CloudKit
import Foundation
import HeraldCrypto
import ProcessTestSupport
import Testing

/// The server-to-server signature: the documented message, the date format, and an independent
/// verifier (the `openssl` command) over a key `openssl` made.
@Suite struct CloudKitSignerTests {
    static let subpath = "/database/1/iCloud.com.example.MyApp/development/public/records/query"

    @Test func theDateIsUTCWholeSecondsWithZ() {
        #expect(CloudKitSigner.dateString(Date(timeIntervalSince1970: 1_453_760_143.987)) == "2016-01-25T22:15:43Z")
    }

    @Test func theMessageIsDateBodyHashAndSubpath() {
        // SHA-256 of the empty body, base64, as Apple's CloudAtlas sample shows it.
        #expect(
            CloudKitSigner.message(date: "2016-01-25T22:15:43Z", body: [], subpath: Self.subpath + "?ckAPIToken=x")
                == "2016-01-25T22:15:43Z:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:\(Self.subpath)"
        )
        let body = Array(#"{"query":{"recordType":"WakePing"}}"#.utf8)
        let hash = Data(SHA256.hash(body)).base64EncodedString()
        #expect(CloudKitSigner.message(date: "d", body: body, subpath: "/p") == "d:\(hash):/p")
    }

    @Test func theHeadersCarryTheKeyTheDateAndADERSignatureOfTheMessage() throws {
        let key = P256PrivateKey()
        let signer = CloudKitSigner(keyID: "abc123", privateKey: key)
        let body = Array(#"{"operations":[]}"#.utf8)
        let date = Date(timeIntervalSince1970: 1_700_000_000.5)
        let headers = try signer.sign(body: body, subpath: Self.subpath, date: date)
        #expect(headers.keyID == "abc123")
        #expect(headers.date == "2023-11-14T22:13:20Z")
        #expect(
            headers.fields.map(\.name) == [
                "X-Apple-CloudKit-Request-KeyID", "X-Apple-CloudKit-Request-ISO8601Date",
                "X-Apple-CloudKit-Request-SignatureV1",
            ]
        )
        let der = try #require(Data(base64Encoded: headers.signature))
        let signature = try ECDSASignature(derRepresentation: [UInt8](der))
        let message = CloudKitSigner.message(date: headers.date, body: body, subpath: Self.subpath)
        #expect(key.publicKey.isValidSignature(signature, for: Array(message.utf8)))
        #expect(!key.publicKey.isValidSignature(signature, for: Array((message + "x").utf8)))
    }

    /// `openssl ecparam -genkey` makes the key (SEC1 PEM, as the CloudKit docs say); Herald signs;
    /// `openssl dgst -verify` checks the DER signature over the documented string.
    @Test func opensslVerifiesTheSignatureOverTheDocumentedString() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-ck-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let keyPath = directory.appendingPathComponent("eckey.pem").path
        let publicPath = directory.appendingPathComponent("public.pem").path
        try await openssl(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", keyPath])
        try await openssl(["ec", "-in", keyPath, "-pubout", "-out", publicPath])
        let pem = try String(contentsOfFile: keyPath, encoding: .utf8)
        #expect(pem.contains("BEGIN EC PRIVATE KEY"))
        let signer = try CloudKitSigner(keyID: "ck-key-1", pemRepresentation: pem)
        let body = Array(#"{"operations":[{"operationType":"create","record":{"recordType":"WakePing"}}]}"#.utf8)
        let subpath = "/database/1/iCloud.com.example.app/production/public/records/modify"
        let headers = try signer.sign(body: body, subpath: subpath, date: Date())

        // The documented string, with the body's hash from openssl rather than from Herald.
        let bodyPath = directory.appendingPathComponent("body").path
        try Data(body).write(to: URL(fileURLWithPath: bodyPath))
        let hashed = try await ChildProcess.run(
            "/bin/sh",
            arguments: ["-c", "openssl dgst -sha256 -binary \"$1\" | openssl base64 -A", "sh", bodyPath]
        )
        let bodyHash = hashed.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(bodyHash.count == 44)
        let documented = "\(headers.date):\(bodyHash):\(subpath)"
        let messagePath = directory.appendingPathComponent("message").path
        let signaturePath = directory.appendingPathComponent("signature.der").path
        try Data(documented.utf8).write(to: URL(fileURLWithPath: messagePath))
        try #require(Data(base64Encoded: headers.signature)).write(to: URL(fileURLWithPath: signaturePath))
        let verified = try await ChildProcess.run(
            "/usr/bin/env",
            arguments: ["openssl", "dgst", "-sha256", "-verify", publicPath, "-signature", signaturePath, messagePath]
        )
        #expect(verified.termination.status == 0, "openssl: \(verified.standardOutput) \(verified.standardError)")
        #expect(verified.standardOutput.contains("Verified OK"))

        // Another subpath is not what was signed: openssl refuses it.
        try Data("\(headers.date):\(bodyHash):/database/1/other".utf8)
            .write(to: URL(fileURLWithPath: messagePath))
        let refused = try await ChildProcess.run(
            "/usr/bin/env",
            arguments: ["openssl", "dgst", "-sha256", "-verify", publicPath, "-signature", signaturePath, messagePath]
        )
        #expect(refused.termination.status != 0)
    }

    @Test func aPKCS8KeyIsReadToo() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-ck-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let sec1 = directory.appendingPathComponent("eckey.pem").path
        let pkcs8 = directory.appendingPathComponent("pkcs8.pem").path
        try await openssl(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", sec1])
        try await openssl(["pkcs8", "-topk8", "-nocrypt", "-in", sec1, "-out", pkcs8])
        let fromSEC1 = try CloudKitSigner(keyID: "k", pemRepresentation: String(contentsOfFile: sec1, encoding: .utf8))
        let text = try String(contentsOfFile: pkcs8, encoding: .utf8)
        #expect(text.contains("BEGIN PRIVATE KEY"))
        let fromPKCS8 = try CloudKitSigner(keyID: "k", pemRepresentation: text)
        #expect(fromSEC1.publicKey == fromPKCS8.publicKey)
    }

    @Test func aBadKeyOrKeyIDSaysWhatToFix() {
        do {
            _ = try CloudKitSigner(keyID: "k", pemRepresentation: "not a key")
            Issue.record("accepted text that is no key")
        } catch {
            #expect(error.code == .invalidConfiguration)
            #expect(error.reason.contains("openssl ecparam"))
        }
        do {
            _ = try CloudKitSigner(keyID: "bad id!", pemRepresentation: P256PrivateKey().pemRepresentation)
            Issue.record("accepted a malformed Key ID")
        } catch {
            #expect(error.reason.contains("CloudKit Dashboard"))
        }
    }

    private func openssl(_ arguments: [String]) async throws {
        let result = try await ChildProcess.run("/usr/bin/env", arguments: ["openssl"] + arguments)
        try #require(result.termination.status == 0, "openssl \(arguments): \(result.standardError)")
    }
}
