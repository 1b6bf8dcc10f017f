import Foundation

/// Starts the services tests need (PostgreSQL, HAProxy) so that they die
/// with the test process even when it crashes: `setpriv --pdeathsig`
/// makes the kernel signal the service when its parent thread ends. That
/// parent is the thread that spawned it, so each service is spawned from a
/// thread of its own that lives until the service has been stopped (a
/// thread of Swift's pool may end at any time and take the service with it).
public final class LaunchedService: @unchecked Sendable {
    public let child: ChildProcess
    private let keeper = DispatchSemaphore(value: 0)

    /// Starts `executable` with `arguments`, as `user` when one is given
    /// (and the tests run as root), signalled with `deathSignal` if the
    /// test process ends first.
    public init(_ executable: String, _ arguments: [String], user: String? = nil, deathSignal: String = "SIGTERM",
                environment: [String: String] = [:], outputDirectory: String, name: String) throws {
        var options = ["--pdeathsig", deathSignal]
        if let user, getuid() == 0 { options += ["--reuid=\(user)", "--regid=\(user)", "--init-groups"] }
        let wrapper = options
        let started = DispatchSemaphore(value: 0)
        let outcome = UncheckedResult<ChildProcess>()
        let keeper = keeper
        let thread = Thread {
            outcome.set(Result {
                try ChildProcess("/usr/bin/setpriv", wrapper + ["--", executable] + arguments, environment: environment,
                                 outputDirectory: outputDirectory, name: name)
            })
            started.signal()
            keeper.wait()
        }
        thread.stackSize = 256 << 10
        thread.start()
        started.wait()
        child = try outcome.get()
    }

    deinit {
        child.stop()
        keeper.signal()
    }

    public var pid: Int32 { child.pid }
    public var isRunning: Bool { child.isRunning }

    /// Sends `signal` by pid and waits up to `timeout` seconds for the exit.
    /// - Returns: the exit status, or `nil` when it is still running.
    @discardableResult
    public func stop(signal: Int32 = SIGTERM, timeout: Double = 30) -> Int32? {
        child.signal(signal)
        return child.waitForExit(timeout: timeout)
    }
}

/// A result handed from one thread to another through a lock.
final class UncheckedResult<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Result<T, Error>?

    func set(_ result: Result<T, Error>) {
        lock.lock()
        value = result
        lock.unlock()
    }

    func get() throws -> T {
        lock.lock()
        defer { lock.unlock() }
        guard let value else { throw TestFailure("the service was not started") }
        return try value.get()
    }
}
