import ExpenseCore
import Testing

/// The outbox's admission decision as a value (docs/sync.md, "A bounded
/// outbox"): jobs, receipt bytes, free space, reserve, and the incoming
/// add, in; admitted, or refused with the reason and its figures, out.
@Suite struct OutboxLimitsTests {
    static let MiB: Int64 = 1 << 20
    static let limits = OutboxLimits(maxJobs: 5, maxReceiptBytes: 3 * MiB, diskReserveBytes: 4 * MiB)

    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let jobs: Int
        let receiptBytes: Int64
        let free: Int64?
        var headroomMissing = false
        let incoming: OutboxLimits.Incoming
        let expected: OutboxRefusal?
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "empty outbox, add without a receipt", jobs: 0, receiptBytes: 0, free: 100 * MiB,
             incoming: .add(receiptBytes: nil, copied: false), expected: nil),
        Case(name: "one job below the limit", jobs: 4, receiptBytes: 0, free: 100 * MiB,
             incoming: .add(receiptBytes: nil, copied: false), expected: nil),
        Case(name: "at the job limit", jobs: 5, receiptBytes: 0, free: 100 * MiB,
             incoming: .add(receiptBytes: nil, copied: false), expected: .jobs(queued: 5, incoming: 1, limit: 5)),
        Case(name: "a receipt needs two jobs, one left", jobs: 4, receiptBytes: 0, free: 100 * MiB,
             incoming: .add(receiptBytes: MiB, copied: false), expected: .jobs(queued: 4, incoming: 2, limit: 5)),
        Case(name: "a receipt needs two jobs, two left", jobs: 3, receiptBytes: 0, free: 100 * MiB,
             incoming: .add(receiptBytes: MiB, copied: false), expected: nil),
        Case(name: "receipt bytes exactly at the limit", jobs: 0, receiptBytes: 2 * MiB, free: 100 * MiB,
             incoming: .add(receiptBytes: MiB, copied: false), expected: nil),
        Case(name: "receipt bytes one past the limit", jobs: 0, receiptBytes: 2 * MiB + 1, free: 100 * MiB,
             incoming: .add(receiptBytes: MiB, copied: false), expected: .receiptBytes(held: 2 * MiB + 1, incoming: MiB, limit: 3 * MiB)),
        Case(name: "receipt bytes full, add without a receipt", jobs: 0, receiptBytes: 3 * MiB, free: 100 * MiB,
             incoming: .add(receiptBytes: nil, copied: false), expected: nil),
        Case(name: "jobs before bytes", jobs: 5, receiptBytes: 3 * MiB, free: 0,
             incoming: .add(receiptBytes: MiB, copied: false), expected: .jobs(queued: 5, incoming: 2, limit: 5)),
        Case(name: "bytes before the disk", jobs: 0, receiptBytes: 3 * MiB, free: 0,
             incoming: .add(receiptBytes: MiB, copied: false), expected: .receiptBytes(held: 3 * MiB, incoming: MiB, limit: 3 * MiB)),
        Case(name: "free space exactly the reserve", jobs: 0, receiptBytes: 0, free: 4 * MiB,
             incoming: .add(receiptBytes: nil, copied: false), expected: nil),
        Case(name: "free space below the reserve", jobs: 0, receiptBytes: 0, free: 4 * MiB - 1,
             incoming: .add(receiptBytes: nil, copied: false), expected: .diskReserve(directory: "/s", free: 4 * MiB - 1, incoming: 0, reserve: 4 * MiB)),
        Case(name: "a receipt to copy would go below the reserve", jobs: 0, receiptBytes: 0, free: 5 * MiB - 1,
             incoming: .add(receiptBytes: MiB, copied: false), expected: .diskReserve(directory: "/s", free: 5 * MiB - 1, incoming: MiB, reserve: 4 * MiB)),
        Case(name: "the same receipt copied already is counted by the file system", jobs: 0, receiptBytes: 0, free: 5 * MiB - 1,
             incoming: .add(receiptBytes: MiB, copied: true), expected: nil),
        Case(name: "the drain's headroom given up: full, whatever is free", jobs: 0, receiptBytes: 0, free: 100 * MiB, headroomMissing: true,
             incoming: .add(receiptBytes: nil, copied: false), expected: .diskFull(directory: "/s", cause: "the drain is using the room set aside for it")),
        Case(name: "the headroom given up, and at the job limit: jobs first", jobs: 5, receiptBytes: 0, free: 100 * MiB, headroomMissing: true,
             incoming: .add(receiptBytes: nil, copied: false), expected: .jobs(queued: 5, incoming: 1, limit: 5)),
        Case(name: "free space unknown: no disk check", jobs: 0, receiptBytes: 0, free: nil,
             incoming: .add(receiptBytes: MiB, copied: false), expected: nil),
    ]

    @Test(arguments: cases)
    func admission(_ c: Case) {
        let use = OutboxLimits.Use(jobs: c.jobs, receiptBytes: c.receiptBytes, diskFreeBytes: c.free, headroomMissing: c.headroomMissing)
        #expect(Self.limits.admit(c.incoming, into: use, directory: "/s") == c.expected)
    }

    @Test func noLimits_admitAnything() {
        let use = OutboxLimits.Use(jobs: .max - 2, receiptBytes: .max - 10, diskFreeBytes: nil)
        #expect(OutboxLimits.none.admit(.add(receiptBytes: 5, copied: false), into: use, directory: "/s") == nil)
    }

    @Test func refusals_nameTheLimitTheFiguresAndWhatFreesRoom() {
        let jobs = OutboxRefusal.jobs(queued: 5, incoming: 1, limit: 5)
        #expect(jobs.reason == .jobs)
        #expect(jobs.message == "the outbox is full: 5 jobs queued (limit 5, outbox_max_jobs), and this needs 1 more; they leave as the server takes them; nothing was stored, try again later")
        let bytes = OutboxRefusal.receiptBytes(held: 3 * Self.MiB, incoming: Self.MiB + Self.MiB / 2, limit: 3 * Self.MiB)
        #expect(bytes.reason == .receiptBytes)
        #expect(bytes.message == "the outbox is full: receipts held use 3.0 MiB of 3.0 MiB (outbox_max_receipt_bytes), and this receipt is 1.5 MiB; they leave as the server takes them; nothing was stored, try again later")
        let disk = OutboxRefusal.diskReserve(directory: "/var/lib/expensed", free: 12 * Self.MiB, incoming: 0, reserve: 256 * Self.MiB)
        #expect(disk.reason == .diskReserve)
        #expect(disk.message == "the outbox is full: the file system of /var/lib/expensed has 12.0 MiB free, below the reserve of 256.0 MiB (disk_reserve); sending frees room, as does freeing space there; nothing was stored, try again later")
        let withReceipt = OutboxRefusal.diskReserve(directory: "/s", free: -5, incoming: 2048, reserve: 1 << 30)
        #expect(withReceipt.message.contains("has 0 bytes free; this receipt's 2.0 KiB would leave less than the reserve of 1.0 GiB (disk_reserve); "))
        let full = OutboxRefusal.diskFull(directory: "/s", cause: "write: No space left on device")
        #expect(full.reason == .diskFull)
        #expect(full.message.hasPrefix("the outbox is full: the file system of /s is full (write: No space left on device); "))
        #expect(OutboxRefusal.Reason.allCases.map(\.rawValue) == ["jobs", "receipt_bytes", "disk_reserve", "disk_full"])
    }

    /// The defaults that depend on the file system's size, and the settings that replace them.
    @Test(arguments: [
        // (file system, settings, max receipt bytes, reserve)
        (Int64(24) << 20, OutboxLimitSettings(), Int64(6) << 20, (Int64(24) << 20) / 20),
        (Int64(100) << 30, OutboxLimitSettings(), Int64(2) << 30, Int64(1) << 30),
        (Int64(4) << 30, OutboxLimitSettings(), Int64(1) << 30, (Int64(4) << 30) / 20),
        (Int64(100) << 30, OutboxLimitSettings(maxJobs: 7, maxReceiptBytes: 3 << 20, diskReserve: .bytes(0)), Int64(3) << 20, 0),
        (Int64(100) << 30, OutboxLimitSettings(diskReserve: .percent(10)), Int64(2) << 30, Int64(10) << 30),
        (Int64(1000), OutboxLimitSettings(diskReserve: .percent(50)), 250, 500),
    ] as [(Int64, OutboxLimitSettings, Int64, Int64)])
    func resolve(_ fileSystem: Int64, _ settings: OutboxLimitSettings, _ receiptBytes: Int64, _ reserve: Int64) {
        let limits = settings.resolve(fileSystemBytes: fileSystem)
        #expect(limits.maxJobs == settings.maxJobs)
        #expect(limits.maxReceiptBytes == receiptBytes)
        #expect(limits.diskReserveBytes == reserve)
    }

    @Test func headroom_isA32ndOfTheFileSystemBetween1And16MiB() {
        #expect(OutboxLimitSettings.headroomBytes(fileSystemBytes: 24 << 20) == 1 << 20)
        #expect(OutboxLimitSettings.headroomBytes(fileSystemBytes: 256 << 20) == 8 << 20)
        #expect(OutboxLimitSettings.headroomBytes(fileSystemBytes: 1 << 40) == 16 << 20)
    }

    @Test func sizes_readAsDfShowsThem() {
        #expect(SizeText.describe(bytes: 0) == "0 bytes")
        #expect(SizeText.describe(bytes: 1023) == "1023 bytes")
        #expect(SizeText.describe(bytes: 1536) == "1.5 KiB")
        #expect(SizeText.describe(bytes: (3 << 20) - 1) == "2.9 MiB")
        #expect(SizeText.describe(bytes: 24 << 20) == "24.0 MiB")
        #expect(SizeText.describe(bytes: 2 << 30) == "2.0 GiB")
        #expect(SizeText.describe(bytes: 5 << 40) == "5.0 TiB")
        #expect(SizeText.describe(bytes: .max) == "8191.9 PiB")
    }
}
