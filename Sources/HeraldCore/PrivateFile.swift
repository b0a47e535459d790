import Glibc

/// Files Herald writes that only their owner may read (mode 0600): generated keys and
/// certificates, `--env-file` output, and the SQLite database with its `-wal`, `-shm` and
/// `-journal` files.
///
/// A file is 0600 from its creation, not chmod-ed after its contents are written: there is no
/// moment in which another account could open it.
public enum PrivateFile {
    /// Read and write for the owner, nothing for anyone else.
    public static let mode: UInt32 = 0o600

    /// Writes `bytes` to `path` with mode 0600, atomically: into a new file in the same directory,
    /// created exclusively with mode 0600 (set with `fchmod`, so no umask changes it), then renamed
    /// over `path`. Whatever was at `path` (a file with a wider mode, a symbolic link) is replaced,
    /// never written through.
    /// - Throws: ``PrivateFileError`` naming the path and the system's reason.
    public static func write(_ bytes: [UInt8], to path: String) throws(PrivateFileError) {
        let temporary = "\(path).tmp-\(String(UInt64.random(in: 0...UInt64.max), radix: 16))"
        let fd = Glibc.open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        guard fd >= 0 else { throw PrivateFileError(path: path, operation: "create", errno: errno) }
        var failure: PrivateFileError?
        if fchmod(fd, mode) != 0 { failure = PrivateFileError(path: path, operation: "chmod", errno: errno) }
        var offset = 0
        while failure == nil, offset < bytes.count {
            let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 {
                if errno == EINTR { continue }
                failure = PrivateFileError(path: path, operation: "write", errno: errno)
            } else {
                offset += written
            }
        }
        if Glibc.close(fd) != 0, failure == nil {
            failure = PrivateFileError(path: path, operation: "write", errno: errno)
        }
        if failure == nil, rename(temporary, path) != 0 {
            failure = PrivateFileError(path: path, operation: "rename", errno: errno)
        }
        if let failure {
            unlink(temporary)
            throw failure
        }
    }

    /// What ``prepare(_:)`` did.
    public enum Preparation: Equatable, Sendable {
        /// The file did not exist and was created empty with mode 0600.
        case created
        /// The file existed with group or other permissions; they were removed (old mode given).
        case tightened(from: UInt32)
        /// The file existed without group or other permissions, or is not a regular file.
        case unchanged
        /// The file has group or other permissions (`mode`) and they could not be removed (it
        /// belongs to another account): `reason` says why. The file is still usable.
        case notTightened(mode: UInt32, reason: String)
    }

    /// Makes sure `path` exists and is private before a library (SQLite) opens it: creates it
    /// empty with mode 0600 when missing; removes group and other permissions from an existing
    /// regular file that has any (an owner who wants another account to read the database gives
    /// it a copy, not the live file).
    /// - Throws: ``PrivateFileError`` when the file cannot be created or examined.
    public static func prepare(_ path: String) throws(PrivateFileError) -> Preparation {
        let fd = Glibc.open(path, O_RDONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        if fd >= 0 {
            defer { Glibc.close(fd) }
            guard fchmod(fd, mode) == 0 else { throw PrivateFileError(path: path, operation: "chmod", errno: errno) }
            return .created
        }
        guard errno == EEXIST else { throw PrivateFileError(path: path, operation: "create", errno: errno) }
        return try tighten(path)
    }

    /// Removes group and other permissions from `path` if it is a regular file that has any;
    /// a missing file is left missing. A file whose mode cannot be changed (another account's)
    /// is reported as ``Preparation/notTightened(mode:reason:)``, not as an error: reading a
    /// database that another account owns stays possible.
    /// - Throws: ``PrivateFileError`` when the file cannot be examined.
    public static func tighten(_ path: String) throws(PrivateFileError) -> Preparation {
        var status = stat()
        guard stat(path, &status) == 0 else {
            if errno == ENOENT { return .unchanged }
            throw PrivateFileError(path: path, operation: "stat", errno: errno)
        }
        let permissions = status.st_mode & 0o7777
        guard status.st_mode & S_IFMT == S_IFREG, permissions & 0o077 != 0 else { return .unchanged }
        guard chmod(path, permissions & 0o700) == 0 else {
            return .notTightened(mode: permissions, reason: String(cString: strerror(errno)))
        }
        return .tightened(from: permissions)
    }
}

/// A private file could not be written or prepared.
public struct PrivateFileError: Error, Sendable, CustomStringConvertible {
    public var path: String
    /// `create`, `chmod`, `write`, `rename` or `stat`.
    public var operation: String
    public var errno: Int32

    public init(path: String, operation: String, errno: Int32) {
        self.path = path
        self.operation = operation
        self.errno = errno
    }

    public var description: String {
        "cannot \(operation) \(path): \(String(cString: strerror(errno))); check that its directory exists and is "
            + "writable by this process"
    }
}
