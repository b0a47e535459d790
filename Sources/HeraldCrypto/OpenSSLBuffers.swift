import COpenSSL

extension Array where Element == UInt8 {
    /// Calls `body` with a pointer to the bytes that is never nil, even for an empty array: several
    /// OpenSSL functions reject a NULL pointer even when the length is zero.
    func withNonNullBytes<Result>(
        _ body: (UnsafePointer<UInt8>, Int) throws -> Result
    ) rethrows -> Result {
        try withUnsafeBufferPointer { buffer in
            if let base = buffer.baseAddress {
                return try body(base, buffer.count)
            }
            return try withUnsafePointer(to: UInt8(0)) { try body($0, 0) }
        }
    }
}

/// Runs `body` on chunks of `count` bytes that fit in a C `int`, for OpenSSL calls that take one.
func forEachIntChunk(count: Int, _ body: (_ offset: Int, _ length: Int32) throws -> Void) rethrows {
    let chunk = 1 << 30
    var offset = 0
    while offset < count {
        let length = Swift.min(chunk, count - offset)
        try body(offset, Int32(length))
        offset += length
    }
}

/// Scoped memory `BIO`s for PEM reading and writing.
enum MemoryBIO {
    /// Calls `body` with a read-only memory BIO over the UTF-8 bytes of `text`.
    static func reading<Result>(_ text: String, _ body: (OpaquePointer) throws -> Result) throws -> Result {
        let bytes = Array(text.utf8)
        guard bytes.count <= Int(Int32.max) else {
            throw CryptoError(.invalidArgument, "The PEM text is too large.")
        }
        return try bytes.withNonNullBytes { base, count in
            guard let bio = BIO_new_mem_buf(base, Int32(count)) else {
                throw CryptoError.openSSL(.internalFailure, "OpenSSL could not allocate a memory BIO.")
            }
            defer { BIO_free(bio) }
            return try body(bio)
        }
    }

    /// Calls `write` with an empty memory BIO and returns what it wrote as text. `write` returns
    /// OpenSSL's result: 1 (or more) on success. OpenSSL clears the buffer when the BIO is freed.
    static func writing(_ what: String, _ write: (OpaquePointer) -> Int32) throws -> String {
        guard let bio = BIO_new(BIO_s_mem()) else {
            throw CryptoError.openSSL(.internalFailure, "OpenSSL could not allocate a memory BIO.")
        }
        defer { BIO_free(bio) }
        guard write(bio) > 0 else {
            throw CryptoError.openSSL(.internalFailure, "OpenSSL could not write the \(what).")
        }
        var data: UnsafeMutablePointer<CChar>? = nil
        let length = copenssl_bio_get_mem_data(bio, &data)
        guard length > 0, let data else {
            throw CryptoError.openSSL(.internalFailure, "OpenSSL wrote an empty \(what).")
        }
        return String(decoding: UnsafeRawBufferPointer(start: data, count: length), as: UTF8.self)
    }
}

/// An `OSSL_PARAM` array together with the memory its keys and values point into.
///
/// `OSSL_PARAM` (and `OSSL_PARAM_BLD`) keep the key and value pointers they are given, so both
/// must outlive the array; Swift's temporary C strings do not. This class copies every key and
/// value into memory it owns, and cleanses and frees that memory when it is released.
final class OpenSSLParameters {
    private var parameters: [OSSL_PARAM] = []
    private var allocations: [(pointer: UnsafeMutableRawPointer, count: Int)] = []

    init() {}

    deinit {
        for allocation in allocations {
            OPENSSL_cleanse(allocation.pointer, allocation.count)
            allocation.pointer.deallocate()
        }
    }

    /// Adds a UTF-8 string parameter, such as a digest or group name.
    func appendString(_ key: String, _ value: String) {
        let keyPointer = copy(key)
        let valuePointer = copy(value)
        parameters.append(OSSL_PARAM_construct_utf8_string(keyPointer, valuePointer, 0))
    }

    /// Adds an octet string parameter, such as a key, salt or public point.
    func appendBytes(_ key: String, _ value: [UInt8]) {
        let keyPointer = copy(key)
        let valuePointer = copy(value)
        parameters.append(OSSL_PARAM_construct_octet_string(keyPointer, valuePointer, value.count))
    }

    /// Adds an unsigned big-number parameter given big-endian bytes (OpenSSL wants native order).
    func appendUnsignedInteger(_ key: String, bigEndian value: [UInt8]) {
        let keyPointer = copy(key)
        #if _endian(little)
            let valuePointer = copy(Array(value.reversed()))
        #else
            let valuePointer = copy(value)
        #endif
        parameters.append(OSSL_PARAM_construct_BN(keyPointer, valuePointer, value.count))
    }

    /// Calls `body` with the parameters, terminated as OpenSSL expects.
    func withUnsafeParameters<Result>(_ body: (UnsafePointer<OSSL_PARAM>) throws -> Result) rethrows -> Result {
        let terminated = parameters + [OSSL_PARAM_construct_end()]
        return try terminated.withUnsafeBufferPointer { try body($0.baseAddress!) }
    }

    private func copy(_ text: String) -> UnsafeMutablePointer<CChar> {
        let utf8 = Array(text.utf8CString)
        let pointer = UnsafeMutablePointer<CChar>.allocate(capacity: utf8.count)
        pointer.initialize(from: utf8, count: utf8.count)
        allocations.append((UnsafeMutableRawPointer(pointer), utf8.count))
        return pointer
    }

    private func copy(_ bytes: [UInt8]) -> UnsafeMutablePointer<UInt8> {
        let pointer = UnsafeMutablePointer<UInt8>.allocate(capacity: Swift.max(bytes.count, 1))
        pointer.initialize(repeating: 0, count: Swift.max(bytes.count, 1))
        pointer.update(from: bytes, count: bytes.count)
        allocations.append((UnsafeMutableRawPointer(pointer), Swift.max(bytes.count, 1)))
        return pointer
    }
}
