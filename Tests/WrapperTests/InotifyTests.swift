import ExpenseTestSupport
import Foundation
@testable import Posix
import Testing

/// The inotify wrapper and the `*at` calls, against the real kernel.
@Suite struct InotifyTests {
    @Test func parse_readsVariableLengthRecordsWithTheNameAtOffset16() {
        func record(watch: Int32, mask: UInt32, cookie: UInt32, name: [UInt8], padded: Int) -> [UInt8] {
            var bytes: [UInt8] = []
            withUnsafeBytes(of: watch.littleEndian) { bytes += $0 }
            withUnsafeBytes(of: mask.littleEndian) { bytes += $0 }
            withUnsafeBytes(of: cookie.littleEndian) { bytes += $0 }
            withUnsafeBytes(of: UInt32(padded).littleEndian) { bytes += $0 }
            return bytes + name + [UInt8](repeating: 0, count: padded - name.count)
        }
        let weird: [UInt8] = [0x2D, 0x0A, 0xFF]
        let buffer = record(watch: 1, mask: Inotify.Mask.closeWrite.rawValue, cookie: 0, name: weird, padded: 16)
            + record(watch: -1, mask: Inotify.Mask.queueOverflow.rawValue, cookie: 0, name: [], padded: 0)
            + record(watch: 1, mask: Inotify.Mask.movedTo.rawValue, cookie: 42, name: Array("b.jpg".utf8), padded: 32)
        let events = buffer.withUnsafeBytes { Inotify.parse($0) }
        #expect(events == [
            Inotify.Event(watch: 1, mask: .closeWrite, cookie: 0, name: FileName(bytes: weird)),
            Inotify.Event(watch: -1, mask: .queueOverflow, cookie: 0, name: nil),
            Inotify.Event(watch: 1, mask: .movedTo, cookie: 42, name: FileName("b.jpg")),
        ])
        #expect(buffer.dropLast(5).withUnsafeBytes { Inotify.parse($0) }.count == 2, "a truncated record is not read")
    }

    @Test func realEvents_namesAreRawBytes() throws {
        let dir = TemporaryDirectory(prefix: "inotify")
        let inotify = try Inotify()
        try inotify.addWatch(dir.path, [.closeWrite, .movedTo])
        #expect(try inotify.readEvents().isEmpty, "non-blocking: nothing yet")
        let directory = try FileDescriptor.open(dir.path, [.readOnly, .directory])
        let hostile = FileName(bytes: [0x2D, 0x0A, 0xFE, 0x2E, 0x6A, 0x70, 0x67])!
        let file = try directory.openAt(hostile, [.writeOnly, .create, .exclusive], mode: 0o600)
        try file.writeAll([1, 2, 3])
        _ = consume file
        let staged = try directory.openAt(FileName("staged")!, [.writeOnly, .create, .exclusive], mode: 0o600)
        try staged.writeAll([1])
        _ = consume staged
        try FileSystem.rename(dir.at("staged"), to: dir.at("moved.jpg"))
        let events = try inotify.readEvents()
        #expect(events.map(\.name) == [hostile, FileName("staged"), FileName("moved.jpg")])
        #expect(events.map(\.mask) == [.closeWrite, .closeWrite, .movedTo])
    }

    @Test func statusAt_doesNotFollowLinks() throws {
        let dir = TemporaryDirectory(prefix: "at")
        try FileManager.default.createSymbolicLink(atPath: dir.at("link"), withDestinationPath: "/etc/hostname")
        let directory = try FileDescriptor.open(dir.path, [.readOnly, .directory])
        #expect(try directory.statusAt(FileName("link")!).kind == .symbolicLink)
        #expect(throws: SystemCallError.self) { try directory.openAt(FileName("link")!, [.readOnly, .noFollow]) }
        do {
            _ = try directory.openAt(FileName("link")!, [.readOnly, .noFollow])
        } catch {
            #expect(error.isSymbolicLink)
        }
    }

    @Test func renameAt_withoutReplacing_failsWhenTheNameIsTaken() throws {
        let dir = TemporaryDirectory(prefix: "at")
        SampleReceipt.write([1], to: dir.at("a"))
        SampleReceipt.write([2], to: dir.at("b"))
        let directory = try FileDescriptor.open(dir.path, [.readOnly, .directory])
        do {
            try directory.renameAt(FileName("a")!, to: FileName("b")!, in: directory, replacing: false)
            Issue.record("replaced b")
        } catch {
            #expect(error.alreadyExists)
        }
        #expect(FileManager.default.contents(atPath: dir.at("b")) == Data([2]))
        try directory.renameAt(FileName("a")!, to: FileName("c")!, in: directory, replacing: false)
        try directory.renameAt(FileName("c")!, to: FileName("b")!, in: directory, replacing: true)
        #expect(FileManager.default.contents(atPath: dir.at("b")) == Data([1]))
        #expect(try directory.entries().map(\.displayName) == ["b"])
    }
}
