import APNs
import APNsSimulator
import Foundation
import HeraldCrypto

/// Target `simulator`: the APNs simulator's request validation, provider-token verification
/// included, as its HTTP/2 server runs it once a request's HEADERS and DATA have arrived.
///
/// Input: `METHOD /path`, `name: value` header lines (HTTP/2 names, lowercase), an empty line,
/// the body. ``privateKey`` signs the seeds' tokens, so mutations of them reach the checks
/// after the signature.
public enum SimulatorFuzz {
    /// A fixed P-256 key (raw scalar) with key id ``keyID`` of team ``teamID``.
    public static let privateKeyHex = "1f2e3d4c5b6a79881f2e3d4c5b6a79881f2e3d4c5b6a79881f2e3d4c5b6a7988"
    public static let keyID = "FUZZKEY001"
    public static let teamID = "FUZZTEAM01"
    public static let topic = "com.example.fuzz"
    /// The time checks run at: the seeds' tokens are issued at 1,900,000,000.
    static let now = Date(timeIntervalSince1970: 1_900_000_100)

    static let checks: SimulatorRequestChecks? = {
        var raw: [UInt8] = []
        var index = privateKeyHex.startIndex
        while index < privateKeyHex.endIndex {
            let next = privateKeyHex.index(index, offsetBy: 2)
            guard let byte = UInt8(privateKeyHex[index..<next], radix: 16) else { return nil }
            raw.append(byte)
            index = next
        }
        guard let key = try? P256PrivateKey(rawRepresentation: raw) else { return nil }
        return SimulatorRequestChecks(
            topics: [topic],
            keys: [APNSSimulatorKey(keyID: keyID, teamID: teamID, publicKey: key.publicKey)],
            teamID: teamID,
            environment: nil
        )
    }()

    public static func run(_ data: [UInt8]) {
        _ = status(data)
    }

    /// The status the simulator would answer `data` with before storing it (200: accepted).
    public static func status(_ data: [UInt8]) -> Int {
        guard let checks else { fatalError("the fixed fuzz key does not load") }
        let input = FuzzInput(data)
        let (method, path) = input.methodAndTarget
        // The token on its own, as the verifier reads it before any other check.
        if let authorization = input.headers.first(where: { $0.name == "authorization" })?.value {
            _ = APNSDecodedProviderToken(authorization)
        }
        return checks.status(method: method, path: path, headers: input.headers, body: input.body, now: now)
    }
}
