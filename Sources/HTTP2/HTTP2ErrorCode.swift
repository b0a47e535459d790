import CNGHTTP2

/// An HTTP/2 error code as carried by RST_STREAM and GOAWAY (RFC 9113 §7).
public struct HTTP2ErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let noError = Self(rawValue: 0x0)
    public static let protocolError = Self(rawValue: 0x1)
    public static let internalError = Self(rawValue: 0x2)
    public static let flowControlError = Self(rawValue: 0x3)
    public static let settingsTimeout = Self(rawValue: 0x4)
    public static let streamClosed = Self(rawValue: 0x5)
    public static let frameSizeError = Self(rawValue: 0x6)
    public static let refusedStream = Self(rawValue: 0x7)
    public static let cancel = Self(rawValue: 0x8)
    public static let compressionError = Self(rawValue: 0x9)
    public static let connectError = Self(rawValue: 0xa)
    public static let enhanceYourCalm = Self(rawValue: 0xb)
    public static let inadequateSecurity = Self(rawValue: 0xc)
    public static let http11Required = Self(rawValue: 0xd)

    public var description: String {
        String(cString: nghttp2_http2_strerror(rawValue))
    }
}

/// What a GOAWAY frame said.
public struct HTTP2GoAway: Sendable, Hashable, CustomStringConvertible {
    /// The highest stream id the peer may have processed; higher streams were not processed.
    public var lastStreamID: Int
    public var errorCode: HTTP2ErrorCode
    /// The opaque debug data (APNs: JSON such as `{"reason":"Shutdown"}`).
    public var debugData: [UInt8]

    public init(lastStreamID: Int, errorCode: HTTP2ErrorCode, debugData: [UInt8]) {
        self.lastStreamID = lastStreamID
        self.errorCode = errorCode
        self.debugData = debugData
    }

    /// The debug data as text (invalid UTF-8 repaired).
    public var debugText: String { String(decoding: debugData, as: UTF8.self) }

    /// The `reason` of JSON debug data (`{"reason":"BadCertificateEnvironment"}`), if it has one.
    public var reason: String? { JSONReason.parse(debugData) }

    public var description: String {
        var text = "GOAWAY last-stream-id \(lastStreamID), \(errorCode)"
        if !debugData.isEmpty { text += ", debug data \(debugText)" }
        return text
    }
}
