import ExpenseTestSupport
import Foundation
import Testing

/// What ships beside the binaries stays in step with them: completions,
/// man pages, documented configuration keys, contrib scripts.
@Suite struct PackagingTests {
    static let root = BuiltProducts.packageRoot

    static func read(_ path: String) throws -> String {
        try String(contentsOfFile: "\(root)/\(path)", encoding: .utf8)
    }

    /// Subcommand names from `expensectl --help`.
    static func subcommands() throws -> [String] {
        let help = try runCommand(BuiltProducts.path("expensectl"), ["--help"]).stdout
        guard let start = help.range(of: "SUBCOMMANDS:\n") else { throw TestFailure("no SUBCOMMANDS in --help") }
        return help[start.upperBound...].split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("  "), !line.hasPrefix("   "), let name = line.split(separator: " ").first else { return nil }
            return String(name)
        }.filter { $0 != "See" }
    }

    @Test func bashAndZshCompletions_knowEverySubcommand() throws {
        let names = try Self.subcommands()
        #expect(names.count >= 12)
        let bash = try Self.read("contrib/completion/expensectl.bash")
        let zsh = try Self.read("contrib/completion/_expensectl")
        for name in names {
            #expect(bash.contains(" \(name) ") || bash.contains("\"\(name) ") || bash.contains(" \(name)\""), "bash completion lacks \(name)")
            #expect(zsh.contains("'\(name):"), "zsh completion lacks \(name)")
            let help = try runCommand(BuiltProducts.path("expensectl"), [name, "--help"])
            #expect(help.status == 0 && help.stdout.hasPrefix("OVERVIEW:"), "\(name) --help")
        }
        #expect(try runCommand("/bin/bash", ["-n", "\(Self.root)/contrib/completion/expensectl.bash"]).status == 0)
    }

    /// The options of a subcommand, from its `--help` (the command table),
    /// without the ones every subcommand takes.
    static func options(of subcommand: String) throws -> [String] {
        let help = try runCommand(BuiltProducts.path("expensectl"), [subcommand, "--help"]).stdout
        guard let start = help.range(of: "OPTIONS:\n") else { throw TestFailure("no OPTIONS in \(subcommand) --help") }
        return help[start.upperBound...].split(separator: "\n").compactMap { line -> String? in
            let trimmed = line.drop(while: { $0 == " " })
            guard trimmed.hasPrefix("--"), let flag = trimmed.split(separator: " ").first else { return nil }
            return String(flag)
        }.filter { !["--socket", "--json", "--account", "--all-accounts", "--help"].contains($0) }
    }

    /// Every option in expensectl's command table is in the man page's entry
    /// for its subcommand and in both completions' lists for it, and the
    /// options every subcommand takes are in each: they cannot drift apart.
    @Test func everyOptionOfEverySubcommand_isInTheManPageAndBothCompletions() throws {
        let man = try Self.read("man/expensectl.1")
        let bash = try Self.read("contrib/completion/expensectl.bash")
        let zsh = try Self.read("contrib/completion/_expensectl")
        /// The man page's entry: from `.B name` after a `.TP` to the next `.TP`, in plain text.
        func manEntry(_ name: String) -> String? {
            let entries = man.components(separatedBy: ".TP\n")
            guard let entry = entries.first(where: { $0.hasPrefix(".B \(name) ") || $0.hasPrefix(".B \(name)\n") }) else { return nil }
            return entry.replacingOccurrences(of: "\\-", with: "-")
                .replacingOccurrences(of: "\\fB", with: "").replacingOccurrences(of: "\\fI", with: "").replacingOccurrences(of: "\\fR", with: "")
        }
        /// A completion's line for `name` in its `case`, with its variables expanded.
        func completionLine(_ text: String, _ name: String, variables: [String]) -> String? {
            guard var line = text.split(separator: "\n").first(where: { $0.drop(while: { $0 == " " }).hasPrefix("\(name))") }).map(String.init) else {
                return nil
            }
            for variable in variables {
                guard let definition = text.range(of: "\(variable)=") else { continue }
                let rest = text[definition.upperBound...]
                let value = rest.hasPrefix("(") ? rest[..<(rest.range(of: "\n)")?.upperBound ?? rest.endIndex)] : rest.prefix(while: { $0 != "\n" })
                line = line.replacingOccurrences(of: "$\(variable)", with: String(value))
            }
            return line
        }
        var checked = 0
        for subcommand in try Self.subcommands() where subcommand != "help" {
            let options = try Self.options(of: subcommand)
            guard !options.isEmpty else { continue }
            let entry = try #require(manEntry(subcommand), "expensectl.1 has no entry for \(subcommand)")
            let bashLine = try #require(completionLine(bash, subcommand, variables: ["fields"]), "bash completion has no \(subcommand)")
            let zshLine = try #require(completionLine(zsh, subcommand, variables: ["fields", "common"]), "zsh completion has no \(subcommand)")
            for option in options {
                #expect(entry.contains("[\(option) ") || entry.contains(" \(option) ") || entry.contains("[\(option)]"),
                        "expensectl.1's \(subcommand) entry lacks \(option)")
                #expect(bashLine.split(whereSeparator: { " \"".contains($0) }).contains(Substring(option)), "bash completion of \(subcommand) lacks \(option)")
                #expect(zshLine.contains("'\(option)["), "zsh completion of \(subcommand) lacks \(option)")
                checked += 1
            }
        }
        #expect(checked >= 20, "\(checked) options checked")
        for global in ["--socket", "--json", "--account", "--all-accounts", "--help"] {
            #expect(man.contains(global.replacingOccurrences(of: "-", with: "\\-")), "expensectl.1 lacks \(global)")
            #expect(bash.contains("\(global) ") || bash.contains("\(global)\""), "bash completion lacks \(global)")
            #expect(zsh.contains("\(global)[") || zsh.contains("\(global.dropFirst(2))}"), "zsh completion lacks \(global)")
        }
    }

    /// bash's completion, run by a real bash against a real daemon: after a
    /// verb that takes an expense it offers the daemon's ids, newest first,
    /// narrowed by what is typed, through the --socket on the line; with no
    /// daemon there, nothing, and no error on the terminal.
    @Test func bashCompletion_offersTheDaemonsExpenseIds() throws {
        let daemon = DaemonHarness()
        try daemon.start()
        defer { daemon.stop() }
        var ids: [String] = []
        for i in 0..<3 {
            let added = try daemon.ctl(["add", "--merchant", "M\(i)", "--amount", "1", "--currency", "EUR", "--date", "2026-01-0\(i + 1)"])
            ids.append(added.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        // bash-completion's _init_completion is not on the machine: the four
        // variables it sets, from COMP_WORDS, are all the completion reads.
        let script = """
            _init_completion() { words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD; cur=${words[cword]}; prev=${words[cword-1]}; }
            _filedir() { :; }
            source "$1"; shift
            COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
            _expensectl
            printf '%s\\n' "${COMPREPLY[@]}"
            """
        func complete(_ words: [String]) throws -> (offered: [String], stderr: String) {
            let result = try runCommand("/bin/bash", ["-c", script, "bash", "\(Self.root)/contrib/completion/expensectl.bash",
                                                      BuiltProducts.path("expensectl")] + words)
            #expect(result.status == 0, "\(words): \(result.stderr)")
            return (result.stdout.split(separator: "\n").map(String.init).filter { !$0.isEmpty }, result.stderr)
        }
        let socket = ["--socket", daemon.socketPath]
        for verb in ["show", "retry", "discard", "delete", "edit", "resolve"] {
            #expect(try complete(socket + [verb, ""]).offered == ids.reversed(), "\(verb)")
        }
        #expect(try complete(socket + ["show", String(ids[1].prefix(12))]).offered.contains(ids[1]))
        #expect(try complete(socket + ["show", ids[1]]).offered == [ids[1]])
        #expect(try complete(socket + ["show", "cp-nothing"]).offered.isEmpty)
        #expect(try complete(socket + ["list", ""]).offered.isEmpty, "list takes no id")
        #expect(Set(try complete(socket + ["list", "--i"]).offered) == ["--ids", "--incomplete"])
        let nowhere = try complete(["--socket", daemon.directory.at("no-daemon.sock"), "show", ""])
        #expect(nowhere.offered.isEmpty)
        #expect(nowhere.stderr.isEmpty, "\(nowhere.stderr)")
    }

    @Test func everyConfigurationKey_isDocumented() throws {
        let help = try runCommand(BuiltProducts.path("expensed"), ["--help"]).stdout
        let flags = help.split(separator: "\n").compactMap { line -> String? in
            let trimmed = line.drop(while: { $0 == " " })
            guard trimmed.hasPrefix("--"), let flag = trimmed.split(separator: " ").first else { return nil }
            return String(flag)
        }.filter { !["--help", "--version", "--config", "--foreground"].contains($0) }
        #expect(flags.count >= 20)
        let guide = try Self.read("docs/configuration.md")
        let manual = try Self.read("man/expensed.conf.5")
        for flag in flags {
            let key = flag.dropFirst(2).replacingOccurrences(of: "-", with: "_")
            #expect(guide.contains("`\(key)`"), "docs/configuration.md lacks \(key)")
            #expect(manual.contains(key.replacingOccurrences(of: "_", with: "\\_")) || manual.contains(key), "expensed.conf(5) lacks \(key)")
        }
    }

    /// The packages' version is debian/changelog's (scripts/package refuses
    /// to build when the binaries print another): one version, everywhere.
    @Test func debianChangelog_namesTheVersionTheBinariesPrint() throws {
        let changelog = try runCommand("/usr/bin/dpkg-parsechangelog", ["-l", "\(Self.root)/debian/changelog", "-SVersion"])
        #expect(changelog.status == 0, "\(changelog.stderr)")
        let version = changelog.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(!version.isEmpty)
        for binary in ["expensed", "expensectl"] {
            #expect(try runCommand(BuiltProducts.path(binary), ["--version"]).stdout == "\(binary) \(version)\n")
        }
    }

    /// What debian/*.install puts into the packages is the repository's own
    /// files (the units, sysusers and tmpfiles files `make install` uses),
    /// each there; and every unit is packaged.
    @Test func debianInstallLists_nameTheRepositorysFiles() throws {
        var listed: [String] = []
        for package in ["expensed", "expense-server"] {
            for line in try Self.read("debian/\(package).install").split(separator: "\n") {
                guard let source = line.split(separator: " ").first, !source.hasPrefix(".build/") else { continue }
                #expect(FileManager.default.fileExists(atPath: "\(Self.root)/\(source)"), "debian/\(package).install: no \(source)")
                listed.append(String(source))
            }
        }
        let units = try FileManager.default.contentsOfDirectory(atPath: "\(Self.root)/systemd")
            .filter { $0.hasSuffix(".service") || $0.hasSuffix(".socket") }
        #expect(units.count == 4)
        for unit in units { #expect(listed.contains("systemd/\(unit)"), "\(unit) is in no package") }
        for users in try FileManager.default.contentsOfDirectory(atPath: "\(Self.root)/systemd/sysusers.d") {
            #expect(listed.contains("systemd/sysusers.d/\(users)"), "\(users) is in no package")
        }
    }

    @Test func manPages_renderWithoutWarnings() throws {
        for page in ["man/expensectl.1", "man/expensed.8", "man/expensed.conf.5", "man/expense-server.8"] {
            let result = try runCommand("/usr/bin/man", ["--warnings", "-E", "UTF-8", "-l", "\(Self.root)/\(page)"],
                                        environment: ["MANPAGER": "cat", "MANWIDTH": "80"])
            #expect(result.status == 0, "\(page): \(result.stderr)")
            #expect(result.stderr.isEmpty, "\(page) warns: \(result.stderr)")
            #expect(result.stdout.contains("NAME"))
        }
    }

    @Test func prometheusExporter_writesTheQueueFigures() throws {
        let daemon = DaemonHarness()
        try daemon.start()
        defer { daemon.stop() }
        _ = try daemon.ctl(["add", "--merchant", "A", "--amount", "1.00", "--currency", "EUR", "--date", "2026-01-01"])
        let output = daemon.directory.at("expensed.prom")
        let result = try runCommand("/usr/bin/env", ["python3", "\(Self.root)/contrib/prometheus/expensed-textfile", output],
                                    environment: ["EXPENSED_SOCKET": daemon.socketPath,
                                                  "PATH": "\(BuiltProducts.directory):/usr/local/bin:/usr/bin:/bin"])
        #expect(result.status == 0, "\(result.stderr)")
        let text = try String(contentsOfFile: output, encoding: .utf8)
        #expect(text.contains("expensed_up 1"))
        #expect(text.contains(#"expensed_jobs{state="queued"} 1"#))
        #expect(text.contains(#"expensed_server_state{state="not_configured"} 1"#))
        #expect(text.contains("expensed_incomplete_expenses 0"))
    }

    @Test func prometheusExporter_saysDownWhenTheDaemonIsNot() throws {
        let dir = TemporaryDirectory()
        let output = dir.at("expensed.prom")
        let result = try runCommand("/usr/bin/env", ["python3", "\(Self.root)/contrib/prometheus/expensed-textfile", output],
                                    environment: ["EXPENSED_SOCKET": dir.at("none.sock"),
                                                  "PATH": "\(BuiltProducts.directory):/usr/local/bin:/usr/bin:/bin"])
        #expect(result.status == 0)
        #expect(try String(contentsOfFile: output, encoding: .utf8).contains("expensed_up 0"))
    }
}
