import CHeraldShims
import Glibc

/// The `posix_spawn` call behind ``ChildProcess``: file actions for the three standard
/// descriptors, no other descriptor inherited, default signal handling in the child.
enum Spawn {
    /// Where one of the child's standard descriptors points.
    enum Target {
        case discard
        /// A descriptor of this process (a pipe's write end), duplicated onto the child's.
        case descriptor(Int32)
        /// Standard output only: a duplicate of the child's standard error.
        case standardError
        /// The descriptor this process has at the same number, left as it is.
        case inherit

        /// The target of a destination that needs no pipe (a captured one gets `.descriptor`).
        init(_ destination: ChildProcess.Destination) {
            switch destination {
            case .discard, .capture: self = .discard
            case .standardError: self = .standardError
            case .inherit: self = .inherit
            }
        }
    }

    static func start(
        executable: String,
        arguments: [String],
        environment: [String: String]?,
        workingDirectory: String?,
        standardOutput: Target,
        standardError: Target
    ) throws -> Int32 {
        // The file actions and attributes live on the heap, not in Swift locals: glibc keeps
        // them by address between the calls that fill them, and a Swift local's address is only
        // guaranteed for the duration of one call. Freed (destroyed, then deallocated) on return.
        let actions = UnsafeMutablePointer<posix_spawn_file_actions_t>.allocate(capacity: 1)
        let attributes = UnsafeMutablePointer<posix_spawnattr_t>.allocate(capacity: 1)
        defer {
            actions.deallocate()
            attributes.deallocate()
        }
        try check("posix_spawn_file_actions_init", posix_spawn_file_actions_init(actions))
        defer { posix_spawn_file_actions_destroy(actions) }
        try check("posix_spawnattr_init", posix_spawnattr_init(attributes))
        defer { posix_spawnattr_destroy(attributes) }

        try check("addopen stdin", posix_spawn_file_actions_addopen(actions, 0, "/dev/null", O_RDONLY, 0))
        try redirect(2, to: standardError, actions)
        try redirect(1, to: standardOutput, actions)
        // Whatever this process holds open (sockets, databases, other children's pipes,
        // with or without O_CLOEXEC) stays out of the child.
        try check("addclosefrom", cherald_spawn_addclosefrom(actions, 3))
        if let workingDirectory {
            try check("addchdir \(workingDirectory)", cherald_spawn_addchdir(actions, workingDirectory))
        }

        // This process may block or ignore signals (the test runner does, SIGPIPE); a child must get
        // the defaults, or SIGTERM would not stop a server under test.
        var all = sigset_t()
        sigfillset(&all)
        try check("setsigdefault", posix_spawnattr_setsigdefault(attributes, &all))
        var none = sigset_t()
        sigemptyset(&none)
        try check("setsigmask", posix_spawnattr_setsigmask(attributes, &none))
        try check(
            "setflags",
            posix_spawnattr_setflags(attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        )

        let argv = CStringArray([executable] + arguments)
        defer { argv.free() }
        let envp = environment.map { CStringArray($0.map { "\($0.key)=\($0.value)" }) }
        defer { envp?.free() }
        var pid: Int32 = 0
        let result = posix_spawn(&pid, executable, actions, attributes, argv.pointers, envp?.pointers ?? environ)
        guard result == 0 else { throw ChildProcessError(operation: "posix_spawn \(executable)", code: result) }
        return pid
    }

    private static func redirect(
        _ descriptor: Int32,
        to target: Target,
        _ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>
    ) throws {
        switch target {
        case .discard:
            try check(
                "addopen \(descriptor)",
                posix_spawn_file_actions_addopen(actions, descriptor, "/dev/null", O_WRONLY, 0)
            )
        case .descriptor(let source):
            // dup2 clears O_CLOEXEC on the child's copy only; the source closes at exec.
            try check("adddup2 \(descriptor)", posix_spawn_file_actions_adddup2(actions, source, descriptor))
        case .standardError:
            try check("adddup2 \(descriptor)", posix_spawn_file_actions_adddup2(actions, 2, descriptor))
        case .inherit:
            break
        }
    }

    /// posix_spawn functions return the error number instead of setting `errno`.
    private static func check(_ operation: String, _ result: Int32) throws {
        guard result == 0 else { throw ChildProcessError(operation: operation, code: result) }
    }
}

/// A NULL-terminated array of C strings for `argv` or `envp`.
private struct CStringArray {
    /// Each element comes from `strdup` and is released by ``free()``, which the caller runs
    /// after `posix_spawn` returns (the child has its own copy by then).
    let pointers: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>

    init(_ strings: [String]) {
        pointers = .allocate(capacity: strings.count + 1)
        for (index, string) in strings.enumerated() { (pointers + index).initialize(to: strdup(string)) }
        (pointers + strings.count).initialize(to: nil)
    }

    func free() {
        var index = 0
        while let string = pointers[index] {
            Glibc.free(string)
            index += 1
        }
        pointers.deallocate()
    }
}
