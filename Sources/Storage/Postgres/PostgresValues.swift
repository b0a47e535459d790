import CLibPQ

/// ``SQLValue`` ↔ PostgreSQL text format (binary for `bytea` parameters).
enum PostgresValues {
    // Type OIDs from pg_type.
    static let boolOID: Oid = 16
    static let byteaOID: Oid = 17
    static let int8OID: Oid = 20
    static let int2OID: Oid = 21
    static let int4OID: Oid = 23
    static let oidOID: Oid = 26
    static let float4OID: Oid = 700
    static let float8OID: Oid = 701
    static let numericOID: Oid = 1700

    /// Parameters laid out for `PQexecParams`: one buffer, with per-parameter offsets.
    struct Parameters {
        var types: [Oid] = []
        var formats: [Int32] = []
        var lengths: [Int32] = []
        var offsets: [Int?] = []
        var buffer: [UInt8] = []
    }

    /// Encodes binds: text format with the type left to the server, except blobs (binary `bytea`).
    static func encode(_ binds: [SQLValue], sql: String) throws -> Parameters {
        var parameters = Parameters()
        for (offset, value) in binds.enumerated() {
            func appendText(_ text: String) {
                parameters.types.append(0)
                parameters.formats.append(0)
                parameters.lengths.append(0)
                parameters.offsets.append(parameters.buffer.count)
                parameters.buffer.append(contentsOf: text.utf8)
                parameters.buffer.append(0)
            }
            switch value {
            case .null:
                parameters.types.append(0)
                parameters.formats.append(0)
                parameters.lengths.append(0)
                parameters.offsets.append(nil)
            case .integer(let integer):
                appendText(String(integer))
            case .real(let real):
                appendText(text(real))
            case .text(let text):
                guard !text.utf8.contains(0) else {
                    throw DatabaseError(
                        code: .queryFailed,
                        message: "the text bound to $\(offset + 1) contains a NUL character, which PostgreSQL text "
                            + "cannot store; bind it as a blob",
                        sql: sql
                    )
                }
                appendText(text)
            case .blob(let bytes):
                guard bytes.count <= Int32.max else {
                    throw DatabaseError(code: .queryFailed, message: "the blob bound to $\(offset + 1) is too large")
                }
                parameters.types.append(byteaOID)
                parameters.formats.append(1)
                parameters.lengths.append(Int32(bytes.count))
                parameters.offsets.append(parameters.buffer.count)
                parameters.buffer.append(contentsOf: bytes)
            }
        }
        return parameters
    }

    /// A double in a form `float8in` reads back exactly.
    static func text(_ real: Double) -> String {
        if real.isNaN { return "NaN" }
        if real == .infinity { return "Infinity" }
        if real == -.infinity { return "-Infinity" }
        return "\(real)"
    }

    /// Runs `body` with C pointers to each parameter (nil for NULL).
    static func withPointers<R>(
        _ parameters: Parameters,
        _ body: ([UnsafePointer<CChar>?]) throws -> R
    ) rethrows -> R {
        try parameters.buffer.withUnsafeBufferPointer { buffer in
            let raw = UnsafeRawPointer(buffer.baseAddress)
            let pointers: [UnsafePointer<CChar>?] = parameters.offsets.map { offset in
                guard let offset, let raw else { return nil }
                return (raw + offset).assumingMemoryBound(to: CChar.self)
            }
            return try body(pointers)
        }
    }

    /// The value of one result field, by column type.
    static func decode(_ result: OpaquePointer, row: Int32, column: Int32, type: Oid) -> SQLValue {
        if PQgetisnull(result, row, column) != 0 { return .null }
        let length = Int(PQgetlength(result, row, column))
        guard let value = PQgetvalue(result, row, column) else { return .null }
        if type == byteaOID {
            var count = 0
            let bytes = value.withMemoryRebound(to: UInt8.self, capacity: length + 1) {
                PQunescapeBytea($0, &count)
            }
            guard let bytes else { return .blob([]) }
            defer { PQfreemem(bytes) }
            return .blob([UInt8](UnsafeBufferPointer(start: bytes, count: count)))
        }
        let text = value.withMemoryRebound(to: UInt8.self, capacity: length) {
            String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
        }
        switch type {
        case boolOID:
            return .integer(text == "t" ? 1 : 0)
        case int2OID, int4OID, int8OID, oidOID:
            return Int64(text).map(SQLValue.integer) ?? .text(text)
        case float4OID, float8OID, numericOID:
            switch text {
            case "NaN": return .real(.nan)
            case "Infinity": return .real(.infinity)
            case "-Infinity": return .real(-.infinity)
            default: return Double(text).map(SQLValue.real) ?? .text(text)
            }
        default:
            return .text(text)
        }
    }
}
