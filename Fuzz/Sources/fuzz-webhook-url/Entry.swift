import CLibFuzzer
import FuzzHarness

/// libFuzzer's entry point: one input, copied out of libFuzzer's buffer (valid only during the
/// call) and run through the `webhook-url` harness.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    FuzzTargets.run("webhook-url", bytes)
    return 0
}

/// The program's `main`: SwiftPM links an executable's `main` to this symbol, so libFuzzer's
/// own `main` is not used; this hands the arguments to libFuzzer's driver instead.
@_cdecl("fuzz_webhook_url_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var count = argc
    var arguments = argv
    return LLVMFuzzerRunDriver(&count, &arguments, fuzzOneInput)
}
