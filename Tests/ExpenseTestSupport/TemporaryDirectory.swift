import Foundation

/// A fresh directory under `$TMPDIR` (or /tmp), or under the folder given,
/// removed with everything in it when this object goes away.
public final class TemporaryDirectory: @unchecked Sendable {
    public let path: String

    public init(prefix: String = "expensed-test", in folder: String? = nil) {
        let base = folder ?? ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp"
        var template = Array("\(base)/\(prefix).XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(made != nil, "mkdtemp failed: \(errno)")
        path = String(cString: template.withUnsafeBufferPointer { $0.baseAddress! })
        // Tests run helpers as other users (nobody); let them traverse.
        chmod(path, 0o755)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }

    /// `path/name`.
    public func at(_ name: String) -> String { "\(path)/\(name)" }
}
