import Dispatch
import ExpenseTestSupport
import Foundation
import Posix
import Synchronization
import Testing

/// `Subprocess` against real programs (`/bin/sh`, `/usr/bin/env`,
/// `/bin/sleep`): exit statuses, signals, the environment, redirection,
/// what the child inherits, and a missing executable.
@Suite struct SubprocessTests {
    let temporary = TemporaryDirectory(prefix: "subprocess")

    /// A file opened for the child to write to, and a way to read it back.
    func outputFile(_ name: String) throws -> (FileDescriptor, () -> String) {
        let path = temporary.at(name)
        let descriptor = try FileDescriptor.open(path, [.writeOnly, .create, .truncate])
        return (descriptor, { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" })
    }

    /// Runs `/bin/sh -c script` to the end; returns how it ended and its standard output.
    func shell(_ script: String, _ arguments: [String] = [], environment: [String: String]? = nil) throws -> (Termination?, String) {
        let (output, read) = try outputFile("shell.out")
        let child = try Subprocess("/bin/sh", arguments: ["-c", script, "sh"] + arguments, environment: environment,
                                   standardOutput: .descriptor(output))
        let ended = child.wait(timeout: .seconds(60))
        return (ended, read())
    }

    @Test(arguments: [0, 1, 7, 64, 255])
    func exitStatus_isWhatTheChildExitedWith(_ status: Int32) throws {
        let (ended, _) = try shell("exit \(status)")
        #expect(ended == .exited(status))
        #expect(ended?.shellStatus == status)
    }

    @Test func childThatKillsItself_isReportedAsSignaled() throws {
        let (ended, _) = try shell("kill -TERM $$")
        #expect(ended == .signaled(SIGTERM))
        #expect(ended?.shellStatus == 128 + SIGTERM)
        #expect(ended?.description == "killed by signal 15 (Terminated)")
    }

    @Test(arguments: [SIGKILL, SIGTERM, SIGINT])
    func signal_reachesTheChild_andWaitReportsIt(_ signal: Int32) throws {
        let child = try Subprocess("/bin/sleep", arguments: ["60"])
        #expect(child.wait(timeout: .milliseconds(50)) == nil, "still sleeping at the deadline")
        #expect(child.isRunning && child.termination == nil)
        child.signal(signal)
        #expect(child.wait(timeout: .seconds(30)) == .signaled(signal))
        #expect(!child.isRunning && child.termination == .signaled(signal), "the termination is kept")
    }

    @Test func arguments_arriveAsGiven() throws {
        let (ended, output) = try shell(#"printf '[%s]\n' "$@""#, ["a", "b c", "", "é", "'quoted'", "$HOME", "--"])
        #expect(ended == .exited(0))
        #expect(output == "[a]\n[b c]\n[]\n[é]\n['quoted']\n[$HOME]\n[--]\n")
    }

    @Test func givenEnvironment_isTheWholeEnvironment() throws {
        let (output, read) = try outputFile("env.out")
        let child = try Subprocess("/usr/bin/env", environment: ["B": "two words", "A": "1", "C": "ü=x"],
                                   standardOutput: .descriptor(output))
        #expect(child.wait(timeout: .seconds(30)) == .exited(0))
        #expect(read() == "A=1\nB=two words\nC=ü=x\n", "nothing of the parent's, sorted")
    }

    @Test func noEnvironment_passesOnTheParents() throws {
        let (output, read) = try outputFile("env.out")
        let child = try Subprocess("/usr/bin/env", arguments: ["-0"], standardOutput: .descriptor(output))
        #expect(child.wait(timeout: .seconds(30)) == .exited(0))
        let seen = Set(read().split(separator: "\0").map(String.init))
        let expected = Set(ProcessInfo.processInfo.environment.map { "\($0.key)=\($0.value)" })
        #expect(!expected.isEmpty && seen == expected)
    }

    @Test func standardStreams_goWhereTheyAreRedirected() throws {
        let input = temporary.at("in")
        SampleReceipt.write(Array("hello\nworld\n".utf8), to: input)
        let (output, readOutput) = try outputFile("out")
        let (errors, readErrors) = try outputFile("err")
        let child = try Subprocess("/bin/sh", arguments: ["-c", "tr a-z A-Z; echo oops >&2; exit 3"],
                                   standardInput: .descriptor(try FileDescriptor.open(input, [.readOnly])),
                                   standardOutput: .descriptor(output), standardError: .descriptor(errors))
        #expect(child.wait(timeout: .seconds(30)) == .exited(3))
        #expect(readOutput() == "HELLO\nWORLD\n")
        #expect(readErrors() == "oops\n")
    }

    @Test func outputAndErrorToOneFile_keepTheirOrder() throws {
        let (both, read) = try outputFile("both")
        let child = try Subprocess("/bin/sh", arguments: ["-c", "echo 1; echo 2 >&2; echo 3"],
                                   standardOutput: .descriptor(both), standardError: .descriptor(both))
        #expect(child.wait(timeout: .seconds(30)) == .exited(0))
        #expect(read() == "1\n2\n3\n")
    }

    @Test func standardInputByDefault_isTheNullDevice() throws {
        // cat reading an inherited terminal or pipe would wait forever.
        let (output, read) = try outputFile("out")
        let child = try Subprocess("/bin/sh", arguments: ["-c", "cat; readlink /proc/self/fd/0"], standardOutput: .descriptor(output))
        #expect(child.wait(timeout: .seconds(30)) == .exited(0))
        #expect(read() == "/dev/null\n")
    }

    /// Descriptors the parent holds without `O_CLOEXEC` (a file, both ends
    /// of a pipe) and the descriptors of redirected files are not in the
    /// child, as `/proc/<child>/fd` shows: it has 0, 1 and 2 only.
    @Test func child_holdsOnlyItsThreeStandardStreams() throws {
        let leakyFile = Glibc.open(temporary.path, O_RDONLY | O_DIRECTORY)
        var leakyPipe: [Int32] = [-1, -1]
        let piped = pipe(&leakyPipe)
        #expect(leakyFile >= 0 && piped == 0)
        defer { for fd in [leakyFile] + leakyPipe where fd >= 0 { Glibc.close(fd) } }
        let (output, _) = try outputFile("out")
        let child = try Subprocess("/bin/sleep", arguments: ["60"], standardOutput: .descriptor(output))
        defer {
            child.signal(SIGKILL)
            child.wait()
        }
        // posix_spawn returns after the exec (glibc waits for it), but the
        // program's dynamic loader then opens its libraries on descriptor 3
        // for a moment, a long one on a loaded machine: a leaked descriptor
        // stays, the loader's goes.
        var descriptors: [String] = []
        do {
            try waitUntil(timeout: 10, "the child to hold 0, 1 and 2 only") {
                descriptors = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(child.pid)/fd").sorted()
                return descriptors == ["0", "1", "2"]
            }
        } catch {
            Issue.record("the child holds \(descriptors); the parent holds \(leakyFile), \(leakyPipe), \(output.rawValue)")
        }
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(child.pid)/fd/1") == temporary.at("out"))
    }

    /// A blocked signal and an ignored one are both inherited across
    /// execve(2); the child starts with neither.
    @Test func child_startsWithNoSignalBlockedOrIgnored() throws {
        // Ignored process-wide, as the daemon's own Signals does: harmless
        // in a test process, whose sockets all use MSG_NOSIGNAL.
        Glibc.signal(SIGPIPE, SIG_IGN)
        var blocked = sigset_t(), previous = sigset_t()
        sigemptyset(&blocked)
        sigaddset(&blocked, SIGTERM)
        pthread_sigmask(SIG_BLOCK, &blocked, &previous)
        let (output, read) = try outputFile("status")
        let spawned = Result { try Subprocess("/bin/grep", arguments: ["-E", "^Sig(Blk|Ign):", "/proc/self/status"], standardOutput: .descriptor(output)) }
        pthread_sigmask(SIG_SETMASK, &previous, nil)
        let child = try spawned.get()
        #expect(child.wait(timeout: .seconds(30)) == .exited(0))
        let parent = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        #expect(!parent.contains("SigIgn:\t0000000000000000"), "the parent does ignore SIGPIPE")
        let masks = read().split(separator: "\n").reduce(into: [String: UInt64]()) { masks, line in
            let parts = line.split(separator: "\t")
            if parts.count == 2, let value = UInt64(parts[1], radix: 16) { masks[String(parts[0])] = value }
        }
        #expect(masks["SigBlk:"] == 0)
        // Less signals 32 and 33 (bits 31 and 32), glibc's own (nptl(7)),
        // which its posix_spawn sets to SIG_IGN whatever it is asked: a
        // glibc program installs its handlers for them at start-up.
        let glibcInternal: UInt64 = 1 << 31 | 1 << 32
        #expect(masks["SigIgn:"].map { $0 & ~glibcInternal } == 0, "\(masks)")
    }

    @Test func missingExecutable_isAClearError() throws {
        let path = temporary.at("no-such-program")
        let error = try #require(throws: SystemCallError.self) { try Subprocess(path) }
        #expect(error.errno == ENOENT && error.isNotFound)
        #expect(error.description == "posix_spawn '\(path)': No such file or directory")
    }

    @Test func fileThatIsNotExecutable_isPermissionDenied() throws {
        let path = temporary.at("script")
        SampleReceipt.write(Array("#!/bin/sh\nexit 0\n".utf8), to: path)
        chmod(path, 0o644)
        for target in [path, temporary.path] {
            let error = try #require(throws: SystemCallError.self) { try Subprocess(target) }
            #expect(error.description == "posix_spawn '\(target)': Permission denied")
        }
    }

    @Test func argumentOrVariableWithANulByte_isRefusedBeforeAnythingRuns() throws {
        let marker = temporary.at("ran")
        for (arguments, environment) in [(["-c", "touch \(marker)", "a\0b"], [String: String]?.none), (["-c", "touch \(marker)"], ["X": "a\0b"])] {
            let error = try #require(throws: SystemCallError.self) { try Subprocess("/bin/sh", arguments: arguments, environment: environment) }
            #expect(error.errno == EINVAL)
        }
        #expect(!FileManager.default.fileExists(atPath: marker))
    }

    /// Many children started and reaped from several threads at once: the
    /// load under which Foundation's `Process.run()` crashed.
    @Test func manyChildrenAtOnce_eachReportsItsOwnStatus() throws {
        let count = 64
        let results = Mutex([Termination?](repeating: nil, count: count))
        DispatchQueue.concurrentPerform(iterations: count) { index in
            let ended = (try? Subprocess("/bin/sh", arguments: ["-c", "exit \(index)"]))?.wait(timeout: .seconds(60))
            results.withLock { $0[index] = ended }
        }
        #expect(results.withLock { $0 } == (0..<count).map { .exited(Int32($0)) })
    }

    @Test func releasedWhileRunning_theChildIsKilledAndReaped() throws {
        var child: Subprocess? = try Subprocess("/bin/sleep", arguments: ["60"])
        let pid = try #require(child?.pid)
        #expect(kill(pid, 0) == 0)
        child = nil
        // Reaped, not a zombie: the pid names no process of ours.
        #expect(kill(pid, 0) == -1 && errno == ESRCH)
    }
}
