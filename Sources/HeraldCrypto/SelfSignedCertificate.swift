import COpenSSL

/// A self-signed X.509 v3 certificate for a P-256 key, made at run time: the TLS identity of the
/// APNs simulator and of test servers, which clients then trust as their own root.
///
/// The certificate is its own CA (`basicConstraints CA:TRUE`) and is also fit to be a TLS server
/// or client leaf: key usage `digitalSignature, keyCertSign`, extended key usage `serverAuth,
/// clientAuth`, and the given subject alternative names, which TLS clients check the host against.
///
/// ```swift
/// let key = P256PrivateKey()
/// let identity = try SelfSignedCertificate.generate(
///     commonName: "Herald APNs simulator",
///     subjectAlternativeNames: ["localhost", "127.0.0.1", "::1"],
///     key: key
/// )
/// // serve with identity.certificatePEM + identity.privateKeyPEM; trust identity.certificatePEM
/// ```
public struct SelfSignedCertificate: Sendable, CustomStringConvertible {
    /// The certificate as PEM (`-----BEGIN CERTIFICATE-----`).
    public var certificatePEM: String
    /// The certificate's private key as PKCS#8 PEM. Not shown in ``description``.
    public var privateKeyPEM: String

    /// Makes and signs (ECDSA with SHA-256) a certificate for `key`.
    ///
    /// - Parameters:
    ///   - commonName: the subject and issuer common name, 1 to 64 characters.
    ///   - subjectAlternativeNames: DNS names (`localhost`, `*.example.test`) and IP address
    ///     literals (`127.0.0.1`, `::1`); each becomes a DNS or IP SAN entry.
    ///   - key: the certificate's key, which also signs it.
    ///   - validity: how long the certificate is valid from now. It is also valid from five
    ///     minutes ago, to allow for clock skew.
    ///   - userID: a subject user ID (UID) to add, as Apple's push certificates carry the bundle ID.
    ///   - extensions: further extensions, given as OID and DER value (non-critical).
    /// - Throws: ``CryptoError`` with code `.invalidArgument` for an empty or too long common
    ///   name, a name that is neither a DNS name nor an IP address, a validity that is not
    ///   positive, or an extension OID OpenSSL cannot read.
    public static func generate(
        commonName: String,
        subjectAlternativeNames: [String],
        key: P256PrivateKey,
        validity: Duration = .seconds(86_400 * 365),
        userID: String? = nil,
        extensions: [(oid: String, value: [UInt8])] = []
    ) throws -> SelfSignedCertificate {
        guard (1...64).contains(commonName.utf8.count), !commonName.utf8.contains(0) else {
            throw CryptoError(.invalidArgument, "A certificate's common name must be 1 to 64 bytes of text.")
        }
        let validSeconds = validity.components.seconds
        guard validSeconds > 0 else {
            throw CryptoError(.invalidArgument, "A certificate's validity must be at least one second.")
        }
        guard let certificate = X509_new() else {
            throw CryptoError.openSSL(.internalFailure, "OpenSSL could not allocate a certificate.")
        }
        defer { X509_free(certificate) }

        try check(X509_set_version(certificate, Int(X509_VERSION_3)), "set the certificate version")
        try setRandomSerialNumber(certificate)
        try check(
            X509_gmtime_adj(X509_getm_notBefore(certificate), -300) != nil ? 1 : 0,
            "set the start of validity"
        )
        try check(
            X509_gmtime_adj(X509_getm_notAfter(certificate), Int(clamping: validSeconds)) != nil ? 1 : 0,
            "set the end of validity"
        )
        try setNames(certificate, commonName: commonName, userID: userID)
        try key.key.withUnsafePointer { key in
            try check(X509_set_pubkey(certificate, key), "set the certificate's public key")
        }
        try addExtension(certificate, NID_basic_constraints, "critical,CA:TRUE")
        try addExtension(certificate, NID_key_usage, "critical,digitalSignature,keyCertSign")
        try addExtension(certificate, NID_ext_key_usage, "serverAuth,clientAuth")
        try addExtension(certificate, NID_subject_key_identifier, "hash")
        try addExtension(certificate, NID_authority_key_identifier, "keyid:always")
        if !subjectAlternativeNames.isEmpty {
            try addSubjectAlternativeNames(certificate, subjectAlternativeNames)
        }
        for (oid, value) in extensions {
            try addExtension(certificate, oid: oid, value: value)
        }
        try key.key.withUnsafePointer { key in
            try check(X509_sign(certificate, key, EVP_sha256()) > 0 ? 1 : 0, "sign the certificate")
        }
        let certificatePEM = try MemoryBIO.writing("certificate PEM") { bio in
            PEM_write_bio_X509(bio, certificate)
        }
        return SelfSignedCertificate(certificatePEM: certificatePEM, privateKeyPEM: key.pemRepresentation)
    }

    public var description: String {
        "SelfSignedCertificate(certificatePEM: \(certificatePEM.utf8.count) bytes, privateKeyPEM: <redacted>)"
    }

    // MARK: - Steps

    private static func check(_ result: Int32, _ step: String) throws {
        guard result == 1 else {
            throw CryptoError.openSSL(.internalFailure, "OpenSSL could not \(step).")
        }
    }

    /// A positive random 127-bit serial number, as RFC 5280 §4.1.2.2 asks (unique, at most 20 bytes).
    private static func setRandomSerialNumber(_ certificate: OpaquePointer) throws {
        var bytes = SecureRandom.bytes(16)
        bytes[0] &= 0x7F
        guard let number = bytes.withNonNullBytes({ BN_bin2bn($0, Int32($1), nil) }) else {
            throw CryptoError.openSSL(.internalFailure, "OpenSSL could not allocate a big number.")
        }
        defer { BN_free(number) }
        guard BN_to_ASN1_INTEGER(number, X509_get_serialNumber(certificate)) != nil else {
            throw CryptoError.openSSL(.internalFailure, "OpenSSL could not set the serial number.")
        }
    }

    private static func setNames(_ certificate: OpaquePointer, commonName: String, userID: String?) throws {
        guard let name = X509_NAME_new() else {
            throw CryptoError.openSSL(.internalFailure, "OpenSSL could not allocate a name.")
        }
        defer { X509_NAME_free(name) }
        let commonNameBytes = Array(commonName.utf8)
        let added = commonNameBytes.withNonNullBytes { bytes, count in
            X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, bytes, Int32(count), -1, 0)
        }
        guard added == 1 else {
            throw CryptoError.openSSL(.invalidArgument, "The certificate's common name was not accepted.")
        }
        if let userID {
            let userIDBytes = Array(userID.utf8)
            let addedUserID = userIDBytes.withNonNullBytes { bytes, count in
                X509_NAME_add_entry_by_NID(name, NID_userId, MBSTRING_UTF8, bytes, Int32(count), -1, 0)
            }
            guard addedUserID == 1, !userIDBytes.isEmpty else {
                throw CryptoError.openSSL(.invalidArgument, "The certificate's user ID was not accepted.")
            }
        }
        try check(X509_set_subject_name(certificate, name), "set the subject name")
        try check(X509_set_issuer_name(certificate, name), "set the issuer name")
    }

    /// Adds an extension written in OpenSSL's configuration syntax; `value` is a constant here,
    /// never caller input.
    private static func addExtension(_ certificate: OpaquePointer, _ nid: Int32, _ value: String) throws {
        var context = X509V3_CTX()
        X509V3_set_ctx(&context, certificate, certificate, nil, nil, 0)
        guard let fileExtension = X509V3_EXT_conf_nid(nil, &context, nid, value) else {
            throw CryptoError.openSSL(.internalFailure, "OpenSSL could not make the certificate extension \(value).")
        }
        defer { X509_EXTENSION_free(fileExtension) }
        try check(X509_add_ext(certificate, fileExtension, -1), "add the certificate extension \(value)")
    }

    /// Adds a non-critical extension from its dotted OID and DER value.
    private static func addExtension(_ certificate: OpaquePointer, oid: String, value: [UInt8]) throws {
        guard let object = OBJ_txt2obj(oid, 1) else {
            OpenSSLErrorQueue.clear()
            throw CryptoError(.invalidArgument, "\(oid) is not a dotted object identifier.")
        }
        defer { ASN1_OBJECT_free(object) }
        guard let data = ASN1_OCTET_STRING_new() else {
            throw CryptoError.openSSL(.internalFailure, "OpenSSL could not allocate an extension value.")
        }
        defer { ASN1_OCTET_STRING_free(data) }
        try check(value.withNonNullBytes { ASN1_OCTET_STRING_set(data, $0, Int32($1)) }, "set the extension \(oid)")
        guard let created = X509_EXTENSION_create_by_OBJ(nil, object, 0, data) else {
            throw CryptoError.openSSL(.internalFailure, "OpenSSL could not make the certificate extension \(oid).")
        }
        defer { X509_EXTENSION_free(created) }
        try check(X509_add_ext(certificate, created, -1), "add the certificate extension \(oid)")
    }

    /// Adds the subject alternative names, built entry by entry (no configuration-string parsing,
    /// so a name cannot smuggle in another entry).
    private static func addSubjectAlternativeNames(_ certificate: OpaquePointer, _ names: [String]) throws {
        guard let list = copenssl_general_names_new() else {
            throw CryptoError.openSSL(.internalFailure, "OpenSSL could not allocate a name list.")
        }
        defer { GENERAL_NAMES_free(list) }
        for name in names {
            guard let entry = try generalName(for: name) else {
                throw CryptoError.openSSL(.internalFailure, "OpenSSL could not allocate a subject alternative name.")
            }
            guard copenssl_general_names_push(list, entry) > 0 else {
                GENERAL_NAME_free(entry)
                throw CryptoError.openSSL(.internalFailure, "OpenSSL could not add a subject alternative name.")
            }
        }
        try check(
            X509_add1_ext_i2d(certificate, NID_subject_alt_name, UnsafeMutableRawPointer(list), 0, 0),
            "add the subject alternative names"
        )
    }

    /// An IP address entry when `name` is an IPv4 or IPv6 literal, otherwise a DNS name entry.
    private static func generalName(for name: String) throws -> UnsafeMutablePointer<GENERAL_NAME>? {
        if let address = a2i_IPADDRESS(name) {
            guard let entry = GENERAL_NAME_new() else {
                ASN1_OCTET_STRING_free(address)
                return nil
            }
            GENERAL_NAME_set0_value(entry, GEN_IPADD, UnsafeMutableRawPointer(address))
            return entry
        }
        OpenSSLErrorQueue.clear()
        guard isDNSName(name) else {
            throw CryptoError(
                .invalidArgument,
                "A subject alternative name must be a DNS name or an IP address; got \"\(name)\"."
            )
        }
        guard let text = ASN1_IA5STRING_new() else {
            return nil
        }
        let bytes = Array(name.utf8)
        let set = bytes.withNonNullBytes { ASN1_STRING_set(text, $0, Int32($1)) }
        guard set == 1, let entry = GENERAL_NAME_new() else {
            ASN1_IA5STRING_free(text)
            return nil
        }
        GENERAL_NAME_set0_value(entry, GEN_DNS, UnsafeMutableRawPointer(text))
        return entry
    }

    /// Letters, digits and hyphens in dot-separated labels of 1 to 63 bytes, at most 253 bytes,
    /// optionally with a leading `*.` wildcard label.
    private static func isDNSName(_ name: String) -> Bool {
        var labels = name.split(separator: ".", omittingEmptySubsequences: false)
        if labels.first == "*", labels.count > 1 {
            labels.removeFirst()
        }
        guard !name.isEmpty, name.utf8.count <= 253 else {
            return false
        }
        return labels.allSatisfy { label in
            (1...63).contains(label.utf8.count)
                && label.utf8.first != UInt8(ascii: "-")
                && label.utf8.last != UInt8(ascii: "-")
                && label.utf8.allSatisfy { byte in
                    switch byte {
                    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                        UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"):
                        true
                    default:
                        false
                    }
                }
        }
    }
}
