import HTTP2
import Testing

/// ``HTTP2GoAway/reason``: the `reason` of JSON debug data, read with the one JSON grammar.
@Suite struct HTTP2GoAwayReasonTests {
    static func reason(_ text: String) -> String? {
        HTTP2GoAway(lastStreamID: 1, errorCode: .noError, debugData: Array(text.utf8)).reason
    }

    @Test("an object's string reason is read; anything else has none")
    func reasons() {
        #expect(Self.reason(#"{"reason":"BadCertificateEnvironment"}"#) == "BadCertificateEnvironment")
        #expect(Self.reason(#"{"other":1,"reason":"Shut\u0064own"}"#) == "Shutdown")
        for text in [
            "", "Shutdown", #" {"reason":"x"}"#, #"{"reason":5}"#, #"{"reason":null}"#, "{}", #"{"reason":"x""#,
            #"{"reason":"a","reason":"b"}"#,
        ] {
            #expect(Self.reason(text) == nil, "\(text)")
        }
    }
}
