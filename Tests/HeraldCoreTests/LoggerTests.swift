import Foundation
import HeraldCore
import Synchronization
import Testing

@Suite struct LoggerTests {
    final class Capture: LogHandler {
        let lines = Mutex<[String]>([])
        let format: StreamLogHandler.Format
        init(format: StreamLogHandler.Format) { self.format = format }
        func log(_ record: LogRecord) {
            let line = StreamLogHandler.render(record, format: format)
            lines.withLock { $0.append(line) }
        }
    }

    @Test func filtersByLevelAndMergesMetadata() {
        let capture = Capture(format: .text)
        var logger = Logger(label: "test", level: .info, handler: capture)
        logger[metadataKey: "request_id"] = "r1"
        logger.debug("hidden")
        logger.info("shown", metadata: ["status": 200, "path": "/a b"])
        let lines = capture.lines.withLock { $0 }
        #expect(lines.count == 1)
        #expect(lines[0].hasSuffix("INFO test: shown path=\"/a b\" request_id=r1 status=200"))
    }

    @Test func sortedMetadataIsWrittenAsGivenAndMergedWithTheLoggers() {
        let capture = Capture(format: .text)
        var logger = Logger(label: "test", level: .info, handler: capture)
        logger.log(.info, "plain", sortedMetadata: [("a", 1), ("b", "x")])
        logger.log(.debug, "hidden", sortedMetadata: [("a", 1)])
        logger[metadataKey: "request_id"] = "r1"
        logger[metadataKey: "b"] = "logger"
        logger.log(.info, "merged", sortedMetadata: [("a", 1), ("b", "call")])
        let lines = capture.lines.withLock { $0 }
        #expect(lines.count == 2)
        #expect(lines.first?.hasSuffix("INFO test: plain a=1 b=x") == true)
        #expect(lines.last?.hasSuffix("INFO test: merged a=1 b=call request_id=r1") == true)
    }

    @Test func textLinesNameTheLevelInUpperCase() {
        let capture = Capture(format: .text)
        let logger = Logger(label: "l", level: .trace, handler: capture)
        for level in LogLevel.allCases { logger.log(level, "m") }
        let lines = capture.lines.withLock { $0 }
        #expect(lines.count == LogLevel.allCases.count)
        for (line, level) in zip(lines, LogLevel.allCases) {
            #expect(line.hasSuffix("Z \(level.description.uppercased()) l: m"), "\(line)")
        }
    }

    @Test("text values are quoted when they hold spaces, quotes, =, control bytes or non-ASCII")
    func textQuoting() {
        let capture = Capture(format: .text)
        var logger = Logger(label: "test", level: .info, handler: capture)
        logger[metadataKey: "who"] = "logger"
        logger.info(
            "m",
            metadata: [
                "a": "plain/path-1", "b": "line\nbreak", "c": "tab\there", "d": "k=v", "e": "caf\u{E9}",
                "f": "sep\u{2028}arator", "g": "", "who": "call",
            ]
        )
        let line = capture.lines.withLock { $0.first } ?? ""
        #expect(line.contains(" a=plain/path-1 "))
        for key in ["b", "c", "d", "e", "f", "g"] {
            #expect(line.contains(" \(key)=\""), "\(key) is not quoted in \(line)")
        }
        #expect(!line.contains("\n"), "a raw newline would split the line")
        #expect(line.hasSuffix(" who=call"), "the call's metadata wins over the logger's")
    }

    @Test func jsonLinesAreValidJSON() throws {
        let capture = Capture(format: .json)
        let logger = Logger(label: "test", level: .trace, handler: capture)
        logger.warning("quote \" and\nnewline", metadata: ["n": 1, "ok": .bool(true)])
        let line = try #require(capture.lines.withLock { $0.first })
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["message"] as? String == "quote \" and\nnewline")
        #expect(object["level"] as? String == "warning")
        #expect(object["n"] as? Int == 1)
    }

    @Test func levelNamesParse() {
        #expect(LogLevel(name: "WARNING") == .warning)
        #expect(LogLevel(name: "verbose") == nil)
    }
}
