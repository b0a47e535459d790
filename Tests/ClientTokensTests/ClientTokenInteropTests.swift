import ClientTokens
import Foundation
import HeraldCrypto
import ProcessTestSupport
import Testing

/// Tokens minted by other implementations: a bug shared by Herald's signer and verifier cannot
/// pass these.
@Suite struct ClientTokenInteropTests {
    /// An HS256 token written by python3's standard library (hmac, hashlib, base64, json), as the
    /// README's Python example mints it.
    @Test func acceptsAnHS256TokenMintedByPython() async throws {
        let script = """
            import base64, hashlib, hmac, json, sys
            def b64(data): return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
            secret, iat = sys.argv[1].encode(), int(sys.argv[2])
            header = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
            claims = {"sub": "user-42", "aud": "herald", "iat": iat, "exp": iat + 3600, "app": "com.example.app"}
            payload = b64(json.dumps(claims).encode())
            signature = hmac.new(secret, f"{header}.{payload}".encode(), hashlib.sha256).digest()
            print(f"{header}.{payload}.{b64(signature)}")
            """
        let result = try await ChildProcess.run(
            "/usr/bin/env",
            arguments: [
                "python3", "-c", script, String(decoding: secret, as: UTF8.self), "\(Int(epoch.timeIntervalSince1970))",
            ]
        )
        try #require(result.termination.status == 0, "python3: \(result.standardError)")
        let token = result.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
        let verified = try verifier().verify(token, now: epoch.addingTimeInterval(10))
        #expect(verified.subject == "user-42")
        #expect(verified.app == "com.example.app")
        // The same token under another secret is refused: the check is not vacuous.
        #expect(reason(verifier(secret: Array(repeating: 1, count: 32)), token, at: epoch) == .badSignature)
    }

    /// An ES256 token whose key and signature come from the `openssl` command: the key pair is
    /// generated there, the signature made there (DER, converted to JOSE's R || S).
    @Test func acceptsAnES256TokenSignedByOpenSSL() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-ct-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let keyPath = directory.appendingPathComponent("key.pem").path
        let publicPath = directory.appendingPathComponent("public.pem").path
        let inputPath = directory.appendingPathComponent("input").path
        try await openssl(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", keyPath])
        try await openssl(["ec", "-in", keyPath, "-pubout", "-out", publicPath])
        let header = Base64URL.encode(Array(#"{"alg":"ES256","kid":"ops-2026","typ":"JWT"}"#.utf8))
        let body = Base64URL.encode(try payload(standardFields()))
        try Data("\(header).\(body)".utf8).write(to: URL(fileURLWithPath: inputPath))
        let signaturePath = directory.appendingPathComponent("signature.der").path
        try await openssl(["dgst", "-sha256", "-sign", keyPath, "-out", signaturePath, inputPath])
        let der = [UInt8](try Data(contentsOf: URL(fileURLWithPath: signaturePath)))
        let raw = try ECDSASignature(derRepresentation: der).rawRepresentation
        let token = "\(header).\(body).\(Base64URL.encode(raw))"

        let keysJSON = try JSONSerialization.data(
            withJSONObject: ["ops-2026": try String(contentsOfFile: publicPath, encoding: .utf8)]
        )
        let keys = try ClientTokenConfiguration.parseKeys([UInt8](keysJSON), source: "test keys")
        #expect(try verifier(keys: keys, secret: nil).verify(token, now: epoch).subject == "u1")
    }

    private func openssl(_ arguments: [String]) async throws {
        let result = try await ChildProcess.run("/usr/bin/env", arguments: ["openssl"] + arguments)
        try #require(result.termination.status == 0, "openssl \(arguments): \(result.standardError)")
    }
}
