import ExpenseTestSupport

/// The LD_PRELOAD shims of Tests/Shims, built with `cc` when a test needs one.
enum Shim {
    /// `Tests/Shims/skip-fsync.c`: fsync and fdatasync of files matching `SKIP_FSYNC_PATTERN` skipped.
    static func skipFsync(in directory: String) throws -> String { try build("skip-fsync", in: directory) }

    /// `Tests/Shims/slow-getpwuid.c`: getpwuid_r of `SLOW_GETPWUID_UID` held until a file exists.
    static func slowGetpwuid(in directory: String) throws -> String { try build("slow-getpwuid", in: directory) }

    /// Builds `Tests/Shims/<name>.c` into `directory`; returns the library's path.
    private static func build(_ name: String, in directory: String) throws -> String {
        let output = "\(directory)/\(name).so"
        let source = "\(BuiltProducts.packageRoot)/Tests/Shims/\(name).c"
        let result = try runCommand("/usr/bin/cc", ["-shared", "-fPIC", "-Wall", "-Werror", "-o", output, source, "-ldl"])
        guard result.status == 0 else { throw TestFailure("cc \(source) failed: \(result.stderr)") }
        return output
    }
}
