import COpenSSL

/// The certificate a TLS client presented to a server that asked for one with
/// ``TLSConfiguration/CertificateVerification/requestClientCertificate``: what a server that judges
/// certificates itself (the APNs simulator) reads from it. Nothing here says who issued it.
public struct TLSPeerCertificate: Sendable, Hashable {
    /// The subject's common name (CN), if it has one.
    public var commonName: String?
    /// The subject's user ID (UID, OID 0.9.2342.19200300.100.1.1), if it has one; Apple's push
    /// certificates carry the app's bundle ID there.
    public var userID: String?
    /// The value (DER) of every extension, by dotted OID.
    public var extensions: [String: [UInt8]]

    public init(commonName: String? = nil, userID: String? = nil, extensions: [String: [UInt8]] = [:]) {
        self.commonName = commonName
        self.userID = userID
        self.extensions = extensions
    }

    /// Reads `certificate` (an `X509 *`, not consumed).
    init(certificate: OpaquePointer) {
        var extensions: [String: [UInt8]] = [:]
        for index in 0..<X509_get_ext_count(certificate) {
            guard let ext = X509_get_ext(certificate, index), let object = X509_EXTENSION_get_object(ext),
                let data = X509_EXTENSION_get_data(ext)
            else { continue }
            var oid = [CChar](repeating: 0, count: 128)
            let length = OBJ_obj2txt(&oid, Int32(oid.count), object, 1)
            guard length > 0, Int(length) < oid.count else { continue }
            extensions[String(decoding: oid.prefix(Int(length)).map { UInt8(bitPattern: $0) }, as: UTF8.self)] =
                Self.bytes(of: data)
        }
        let subject = X509_get_subject_name(certificate)
        self.init(
            commonName: subject.flatMap { Self.entry(NID_commonName, in: $0) },
            userID: subject.flatMap { Self.entry(NID_userId, in: $0) },
            extensions: extensions
        )
    }

    /// The UTF8String elements at the top level of the DER SEQUENCE `der`, in order (other
    /// elements are skipped), or nil when `der` is not a SEQUENCE. Apple's topics extension
    /// (1.2.840.113635.100.6.3.6) lists a certificate's topics this way.
    public static func utf8Strings(inSequence der: [UInt8]) -> [String]? {
        der.withUnsafeBufferPointer { buffer -> [String]? in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            guard let sequence = d2i_ASN1_SEQUENCE_ANY(nil, &cursor, buffer.count) else {
                ERR_clear_error()
                return nil
            }
            defer { copenssl_sk_asn1_type_pop_free(sequence) }
            var strings: [String] = []
            for index in 0..<copenssl_sk_asn1_type_num(sequence) {
                guard let element = copenssl_sk_asn1_type_value(sequence, index),
                    ASN1_TYPE_get(element) == V_ASN1_UTF8STRING,
                    let string = element.pointee.value.utf8string
                else { continue }
                strings.append(String(decoding: bytes(of: string), as: UTF8.self))
            }
            return strings
        }
    }

    private static func entry(_ nid: Int32, in name: OpaquePointer) -> String? {
        let index = X509_NAME_get_index_by_NID(name, nid, -1)
        guard index >= 0, let entry = X509_NAME_get_entry(name, index), let data = X509_NAME_ENTRY_get_data(entry)
        else { return nil }
        var utf8: UnsafeMutablePointer<UInt8>?
        let length = ASN1_STRING_to_UTF8(&utf8, data)
        guard length >= 0, let utf8 else { return nil }
        defer { copenssl_free(utf8) }
        return String(decoding: UnsafeBufferPointer(start: utf8, count: Int(length)), as: UTF8.self)
    }

    private static func bytes(of string: UnsafePointer<ASN1_STRING>) -> [UInt8] {
        guard let data = ASN1_STRING_get0_data(string) else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: Int(ASN1_STRING_length(string))))
    }
}
