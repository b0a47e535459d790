import APNs
import Foundation
import HeraldCore
import HeraldIO

/// What a provider certificate presented on a certificate-based connection says (APNS.md §2.2):
/// the app's bundle ID, the topics it may push to, and the environments it is for.
///
/// Read from the subject's user ID (Apple puts the bundle ID there; the common name
/// `Apple Push Services: <bundle ID>` serves when it is missing), Apple's extensions
/// 1.2.840.113635.100.6.3.1 (development, the sandbox) and .2 (production), and the topics
/// extension .6 (a SEQUENCE of UTF8String topics, each followed by its kinds). Who issued the
/// certificate is not checked: the simulator has no Apple CA to check against.
struct CertificateIdentity: Sendable, Equatable {
    static let developmentOID = "1.2.840.113635.100.6.3.1"
    static let productionOID = "1.2.840.113635.100.6.3.2"
    static let topicsOID = "1.2.840.113635.100.6.3.6"

    var bundleID: String
    /// The bundle ID alone, or every topic of the topics extension.
    var topics: [String]
    var environments: Set<APNSEnvironment>

    /// `nil` when `certificate` is not a push certificate: no bundle ID, or neither environment.
    init?(_ certificate: TLSPeerCertificate) {
        guard let bundleID = certificate.userID ?? certificate.commonName.flatMap(Self.bundleID(inCommonName:)),
            HeaderRules.isWellFormedTopic(bundleID)
        else { return nil }
        var environments: Set<APNSEnvironment> = []
        if certificate.extensions[Self.developmentOID] != nil { environments.insert(.sandbox) }
        if certificate.extensions[Self.productionOID] != nil { environments.insert(.production) }
        guard !environments.isEmpty else { return nil }
        self.bundleID = bundleID
        self.environments = environments
        let listed = certificate.extensions[Self.topicsOID].flatMap(TLSPeerCertificate.utf8Strings(inSequence:)) ?? []
        self.topics = listed.isEmpty ? [bundleID] : listed
    }

    /// 403 `BadCertificateEnvironment` when the simulator plays an environment the certificate is
    /// not for; nil otherwise (also when it plays either).
    func refusal(in environment: APNSEnvironment?) -> SimulatorRejection? {
        guard let environment, !environments.contains(environment) else { return nil }
        return .forbidden(.badCertificateEnvironment)
    }

    /// The topic a device push on this connection goes to: its `apns-topic`, which must be one
    /// of the certificate's (else 400 `TopicDisallowed`, as providers report from APNs for a
    /// topic their certificate does not list: alloy/lowdown#23,
    /// jazzband/django-push-notifications#424), or the bundle ID when it names none and the
    /// certificate has one topic (400 `MissingTopic` when it has several).
    func topic(for requested: String?) -> Result<String, SimulatorRejection> {
        guard let requested else {
            return topics.count == 1 ? .success(bundleID) : .failure(.badRequest(.missingTopic))
        }
        return topics.contains(requested) ? .success(requested) : .failure(.badRequest(.topicDisallowed))
    }

    /// The bundle ID in a common name such as `Apple Push Services: com.example.app` or
    /// `Apple Development IOS Push Services: com.example.app`.
    private static func bundleID(inCommonName name: String) -> String? {
        guard name.hasPrefix("Apple "), let colon = name.range(of: "Push Services: ") else { return nil }
        let bundleID = String(name[colon.upperBound...]).trimmingSpaces()
        return bundleID.isEmpty ? nil : bundleID
    }
}

/// How a connection authenticates: a provider token per request, or the certificate its client
/// presented in the TLS handshake (then `authorization` is ignored).
enum ConnectionCredentials: Sendable, Equatable {
    case providerToken
    case certificate(CertificateIdentity)
    /// A certificate that is not a push certificate: every request gets 403 `BadCertificate`.
    case unusableCertificate

    init(_ certificate: TLSPeerCertificate?) {
        guard let certificate else {
            self = .providerToken
            return
        }
        self = CertificateIdentity(certificate).map { .certificate($0) } ?? .unusableCertificate
    }
}
