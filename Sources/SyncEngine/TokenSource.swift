#if canImport(Glibc)
import Glibc
#endif
import ExpenseCore
import Posix
import Synchronization

/// The bearer token, read from a file (`token_file`, or systemd's
/// `$CREDENTIALS_DIRECTORY/token`) and read again whenever the file
/// changes. The token itself never leaves this type except into an
/// `Authorization` header.
final class TokenSource: Sendable {
    /// The file, or nil when none is configured (requests then go without a token).
    let path: String?
    /// For an account's file in `accounts_dir`: the uid that must own it
    /// (the daemon's), no one else having any permission on it.
    let requiredOwner: UInt32?
    private let state = Mutex(State())

    private struct State {
        var token: String?
        var stamp: Stamp?
        var problem: String?
        /// Counts the versions of the file read so far (0: none yet): a
        /// refusal earned with an older version says nothing about the
        /// current one.
        var generation = 0
        /// When `current()` last looked at the file (monotonic nanoseconds).
        var checked: UInt64 = 0
    }

    /// What identifies a version of the file.
    struct Stamp: Equatable {
        let inode: UInt64
        let size: Int64
        let modified: Int64
        /// An account file made private (chmod 600) is a new version too.
        let mode: UInt32
        let owner: UInt32

        init(_ status: FileStatus) {
            (inode, size, modified, mode, owner) = (status.inode, status.size, status.modifiedNanoseconds, status.mode, status.owner)
        }
    }

    /// The file of one account of `accounts_dir`, which must be private to `owner`.
    init(accountFile: String, owner: UInt32) {
        path = accountFile
        requiredOwner = owner
    }

    /// No file at all, for the reason given (an account without one).
    init(missing reason: String) {
        path = nil
        requiredOwner = nil
        state.withLock { $0.problem = reason }
    }

    init(configuredPath: String?) {
        requiredOwner = nil
        if let configuredPath {
            path = configuredPath
        } else if let credentials = Environment["CREDENTIALS_DIRECTORY"] {
            // An empty one would make the token file "/token"; systemd never sets it so.
            path = credentials.isEmpty ? nil : "\(credentials)/token"
            if credentials.isEmpty {
                state.withLock { $0.problem = "CREDENTIALS_DIRECTORY is set but empty, so there is no token file" }
            }
        } else {
            path = nil
        }
    }

    /// The current token, reading the file again when it changed (see
    /// ``reloadIfDue()``).
    /// - Returns: the token, or nil with why (never with the file's content),
    ///   and the generation of the file it came from.
    func current() -> (token: String?, problem: String?, generation: Int) {
        reloadIfDue()
        return state.withLock { ($0.token, $0.problem, $0.generation) }
    }

    /// Reads the file again when it changed, looking at it no more than
    /// once a second (a drain sends thousands of requests a second);
    /// ``reloadIfChanged()`` always looks.
    func reloadIfDue() {
        let due = state.withLock { state -> Bool in
            // Read under the lock: the clock only moves forward for whoever holds it.
            let now = Clock.monotonicNanoseconds
            guard now - state.checked >= 1_000_000_000 || state.generation == 0 else { return false }
            state.checked = now
            return true
        }
        if due { reloadIfChanged() }
    }

    /// The token as last read, without looking at the file: for the thread
    /// that hands requests over, which must not wait for a file system.
    func latest() -> (token: String?, generation: Int) {
        state.withLock { ($0.token, $0.generation) }
    }

    /// The generation of the last version of the file read.
    var generation: Int { state.withLock { $0.generation } }

    /// Reads the file again if it changed. Returns true when it did.
    ///
    /// The checks and the read are of one opened file (`fstat(2)` of the
    /// descriptor read from): a rename between a look by path and the read
    /// would hand over a file whose owner and mode no one checked. An
    /// account's file is opened with `O_NOFOLLOW`, so a symbolic link in
    /// `accounts_dir` is refused rather than followed to a file elsewhere.
    @discardableResult
    func reloadIfChanged() -> Bool {
        guard let path else { return false }
        // The look by path only says whether a new version may be there;
        // what is read is checked by its descriptor below.
        let (previous, loaded) = state.withLock { ($0.stamp, $0.generation > 0) }
        let looked = (try? FileSystem.status(path, followLinks: requiredOwner == nil)).map(Stamp.init)
        if loaded && looked == previous { return false }
        var stamp = looked
        var token: String?
        var problem: String?
        do {
            // Non-blocking, so that a FIFO put there cannot hold the open.
            let file = try FileDescriptor.open(path, requiredOwner == nil ? [.readOnly, .noCTTY, .nonBlocking] : [.readOnly, .noCTTY, .nonBlocking, .noFollow])
            let status = try file.status()
            stamp = Stamp(status)
            guard status.kind == .regular else { throw TokenProblem("token file '\(path)' is not a regular file") }
            if let requiredOwner {
                // Another user's file, or one others may read, is no one's
                // credential: it may have been planted or seen.
                guard status.owner == requiredOwner, status.mode & 0o077 == 0 else {
                    throw TokenProblem("token file '\(path)' is mode \(String(status.mode & 0o7777, radix: 8)) owned by uid \(status.owner); it must be a file of mode 600 owned by uid \(requiredOwner), expensed's user")
                }
            }
            guard let bytes = try file.readAll(limit: 8192) else {
                throw TokenProblem("token file '\(path)' is larger than 8 KiB")
            }
            let text = String(decoding: bytes, as: UTF8.self).trimmingSpaces()
            guard !text.isEmpty else { throw TokenProblem("token file '\(path)' is empty") }
            guard text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                throw TokenProblem("token file '\(path)' holds characters a bearer token cannot have")
            }
            token = text
        } catch let error as TokenProblem {
            problem = error.message
        } catch let error as SystemCallError where error.errno == ELOOP && requiredOwner != nil {
            problem = "token file '\(path)' is a symbolic link; it must be a file of mode 600 owned by uid \(requiredOwner ?? 0), expensed's user"
        } catch let error as SystemCallError {
            problem = "cannot read token file '\(path)': \(error.reason)"
        } catch {
            problem = "cannot read token file '\(path)'"
        }
        // Callers at the same moment may both have read it: one version of
        // the file is one generation.
        return state.withLock {
            if $0.generation > 0 && $0.stamp == stamp { return false }
            $0.token = token
            $0.stamp = stamp
            $0.problem = problem
            $0.generation += 1
            return true
        }
    }

    private struct TokenProblem: Error {
        let message: String
        init(_ message: String) { self.message = message }
    }
}

