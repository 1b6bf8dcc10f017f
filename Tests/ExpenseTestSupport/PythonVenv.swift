import Foundation

/// The Python virtual environment `scripts/setup --test` builds with the
/// pinned real backends (ihatemoney, fava, beancount; see
/// scripts/requirements-test.txt): `$EXPENSED_VENV`, or `.build/venv` in
/// the package.
public enum PythonVenv {
    public static let directory: String = {
        ProcessInfo.processInfo.environment["EXPENSED_VENV"] ?? "\(BuiltProducts.packageRoot)/.build/venv"
    }()

    /// The path of `bin/name` in the environment.
    /// - Throws: when it is not there, saying how to make it.
    public static func executable(_ name: String) throws -> String {
        let path = "\(directory)/bin/\(name)"
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw TestFailure("\(path) is missing: run scripts/setup --test (it builds \(directory) from scripts/requirements-test.txt)")
        }
        return path
    }

    /// The environment every Python process of the tests gets: no bytecode
    /// written into the shared environment, unbuffered output, and none of
    /// the variables the backends read their files or settings from.
    public static let environment: [String: String] = [
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "PYTHONWARNINGS": "ignore",
        "BEANCOUNT_FILE": "",
    ]

    /// Runs `script` with the environment's Python and returns what it did.
    public static func run(_ script: String, arguments: [String] = [], timeout: Double = 120) throws -> CommandResult {
        try runCommand(executable("python3"), ["-c", script] + arguments, environment: environment, timeout: timeout)
    }
}
