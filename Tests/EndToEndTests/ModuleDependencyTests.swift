import ExpenseTestSupport
import Foundation
import Testing

/// The dependency rules of `Package.swift` (docs/architecture.md), held:
/// the compiler lets a module import any module the build has made, so
/// a rule written only in `Package.swift` could be broken silently. Each
/// source file imports only what its module declares, and the daemon's
/// subsystems declare no sibling they must not see.
@Suite struct ModuleDependencyTests {
    /// Each library and executable target under `Sources/`: its declared dependencies and its folder.
    static func targets() throws -> [String: (dependencies: Set<String>, path: String)] {
        let manifest = try String(contentsOfFile: "\(BuiltProducts.packageRoot)/Package.swift", encoding: .utf8)
        let pattern = try NSRegularExpression(pattern: #"\.(?:target|executableTarget)\(name: "([\w-]+)", dependencies: \[([^\]]*)\](?:,\s*path: "([^"]+)")?"#)
        var targets: [String: (Set<String>, String)] = [:]
        for match in pattern.matches(in: manifest, range: NSRange(manifest.startIndex..., in: manifest)) {
            func group(_ index: Int) -> String? { Range(match.range(at: index), in: manifest).map { String(manifest[$0]) } }
            guard let name = group(1), let list = group(2) else { continue }
            let path = group(3) ?? "Sources/\(name)"
            guard path.hasPrefix("Sources/") else { continue }
            let dependencies = list.split(separator: ",").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: " \n\"")) }
            targets[name] = (Set(dependencies), path)
        }
        return targets
    }

    /// The modules a file imports.
    static func imports(in path: String) throws -> [String] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").compactMap { line -> String? in
            let words = line.split(separator: " ").filter { !["@testable", "internal", "package", "public", "@_implementationOnly"].contains($0) }
            guard words.count == 2, words[0] == "import" else { return nil }
            return String(words[1])
        }
    }

    /// The toolchain's own modules.
    static let toolchain: Set<String> = ["Foundation", "FoundationEssentials", "Synchronization", "Dispatch", "Glibc"]

    @Test func everyImport_isADeclaredDependency() throws {
        let targets = try Self.targets()
        #expect(targets.count >= 25, "\(targets.keys.sorted())")
        for (name, target) in targets {
            let folder = "\(BuiltProducts.packageRoot)/\(target.path)"
            let files = try FileManager.default.subpathsOfDirectory(atPath: folder).filter { $0.hasSuffix(".swift") }
            #expect(!files.isEmpty, "\(name): no sources in \(target.path)")
            for file in files {
                for module in try Self.imports(in: "\(folder)/\(file)") where module != name && !Self.toolchain.contains(module) {
                    #expect(target.dependencies.contains(module), "\(target.path)/\(file) imports \(module), which \(name) does not declare")
                }
            }
        }
    }

    @Test(arguments: [
        // The engine sees a backend only through SyncBackend, and never the socket.
        ("SyncEngine", ["Curl", "CCurl", "ControlSocket", "ControlProtocol", "SpoolIntake", "ExpenseServerBackend", "SQLite"]),
        // The socket hands typed requests to the daemon; it never touches the store or the engine.
        ("ControlSocket", ["OutboxStore", "SQLite", "SyncEngine", "SpoolIntake", "Curl"]),
        // The spool tells the rest only through SpoolEvents.
        ("SpoolIntake", ["SyncEngine", "ControlSocket", "ControlProtocol", "Curl"]),
        ("OutboxStore", ["SyncEngine", "ControlSocket", "SpoolIntake", "ControlProtocol", "Curl"]),
        // The domain: no I/O, no C but the digest.
        ("ExpenseCore", ["Posix", "SQLite", "Curl", "Systemd"]),
        // Reading a receipt's text into fields: pure, the decoder's C stays in the child.
        ("ReceiptReading", ["Posix", "SQLite", "Curl", "Systemd", "CDecoder", "ReceiptCopy", "OutboxStore"]),
    ])
    func subsystem_declaresNoSiblingItMustNotSee(_ name: String, _ forbidden: [String]) throws {
        let target = try #require(try Self.targets()[name])
        #expect(target.dependencies.isDisjoint(with: forbidden), "\(name) depends on \(target.dependencies.intersection(forbidden).sorted())")
    }
}
