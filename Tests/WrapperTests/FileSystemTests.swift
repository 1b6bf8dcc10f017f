import ExpenseTestSupport
import Foundation
@testable import Posix
import Testing

/// `FileSystem` against a real temporary directory. That each new
/// directory's parent is fsynced is shown on the daemon's system calls
/// (EndToEndTests, DirectoryDurabilityTests); here, what is made.
@Suite struct FileSystemTests {
    let temporary = TemporaryDirectory(prefix: "filesystem")

    @Test func makeDirectory_saysWhetherItCreated_andRefusesAFileInTheWay() throws {
        let path = temporary.at("a")
        #expect(try FileSystem.makeDirectory(path) == true)
        #expect(try FileSystem.makeDirectory(path) == false, "an existing directory is fine")
        SampleReceipt.write([1], to: temporary.at("file"))
        #expect(throws: SystemCallError.self) { try FileSystem.makeDirectory(temporary.at("file")) }
    }

    @Test func makeDirectories_createsEveryMissingLevel() throws {
        let path = temporary.at("x/y/z")
        try FileSystem.makeDirectories(path, mode: 0o750)
        #expect(try FileSystem.status(path).kind == .directory)
        #expect(try FileSystem.status(temporary.at("x")).mode == 0o750 & ~Self.umask)
        try FileSystem.makeDirectories(path)
    }

    /// Names of every length up to NAME_MAX, enough of them to fill
    /// readdir's buffer many times over, come back whole and only once.
    @Test func contents_listsEveryNameOfEveryLength() throws {
        var made: Set<String> = []
        for n in 0..<1200 {
            let tag = "\(n)-"
            let name = tag + String(repeating: "n", count: max(0, (n * 7) % 256 - tag.count))
            SampleReceipt.write([], to: temporary.at(name))
            made.insert(name)
        }
        let listed = try FileSystem.contents(of: temporary.path).compactMap(\.string)
        #expect(listed.count == made.count)
        #expect(Set(listed) == made)
        let throughDescriptor = try FileDescriptor.open(temporary.path, [.readOnly, .directory]).entries().compactMap(\.string)
        #expect(Set(throughDescriptor) == made && throughDescriptor.count == made.count)
    }

    @Test(arguments: [("/a/b", "/a"), ("/a", "/"), ("a", "."), ("a/b/", "a"), ("/a/b//", "/a"), ("/", "/")])
    func parent_isTheDirectoryAPathIsIn(_ path: String, parent: String) {
        #expect(FileSystem.parent(of: path) == parent)
    }

    static var umask: UInt32 {
        let old = Glibc.umask(0)
        Glibc.umask(old)
        return UInt32(old)
    }
}
