import Foundation
import HeraldCore
import Testing

@Suite struct ThreadNameTests {
    @Test("a thread names itself for the kernel, cut to 15 bytes")
    func namesTheCallingThread() async throws {
        let name = await withCheckedContinuation { (continuation: CheckedContinuation<String, Never>) in
            let thread = Thread {
                ThreadName.setCurrent("herald-test-thread-name")
                let name = try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)
                continuation.resume(returning: name ?? "")
            }
            thread.start()
        }
        #expect(name == "herald-test-thr\n")
    }
}
