import APNs
import HeraldCrypto

/// Test data shared by the suites.
enum Fixtures {
    /// A P-256 key in Apple's `.p8` form (PKCS#8 PEM), made with
    /// `openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256`. Test-only.
    static let p8 = """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg1IBma1c4B2e1nAZU
        KdGuK9/p+60FgcqCxk4KXVeG/wmhRANCAASO1ZKBPJWybQwwit78lAPGWAnHutkH
        qf/WbKYdAEWYZihfylH+IvjSPxONjc8LH+6VZRPq0UIj5woj+R60Gx1L
        -----END PRIVATE KEY-----

        """

    /// The public half of ``p8``, from `openssl pkey -pubout`.
    static let p8PublicKey = """
        -----BEGIN PUBLIC KEY-----
        MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEjtWSgTyVsm0MMIre/JQDxlgJx7rZ
        B6n/1mymHQBFmGYoX8pR/iL40j8TjY3PCx/ulWUT6tFCI+cKI/ketBsdSw==
        -----END PUBLIC KEY-----

        """

    static let keyID = "ABC123DEFG"
    static let teamID = "DEF123GHIJ"
    static let bundleID = "com.example.app"
    static let token = String(repeating: "0123456789abcdef", count: 4)
    static let otherToken = String(repeating: "fedcba9876543210", count: 4)

    static func signingKey() throws -> APNSSigningKey {
        try APNSSigningKey(keyID: keyID, teamID: teamID, pemRepresentation: p8)
    }

    static func alertRequest(token: String = Fixtures.token) -> APNSRequest {
        APNSRequest(
            deviceToken: token,
            pushType: .alert,
            topic: .bundleID(bundleID),
            payload: Array(#"{"aps":{"alert":"hi"}}"#.utf8)
        )
    }
}
