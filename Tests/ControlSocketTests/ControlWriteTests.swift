@testable import ControlSocket
import Testing

/// What each write of a connection's answers carries. A descriptor goes
/// with the write that carries the first byte of its line, so a write
/// never runs past the start of the next line that has one: two answers
/// with descriptors queued together (a client that pipelines two
/// `receipt` requests and reads nothing for a while) once went out in one
/// write with the first descriptor only, and the second's offset went
/// negative, which trapped at the next answer.
@Suite struct ControlWriteTests {
    static let cases: [(output: Int, offsets: [Int], end: Int, passing: Bool)] = [
        (100, [], 100, false),
        (100, [0], 100, true),
        (100, [40], 40, false),
        (100, [0, 40], 40, true),
        (100, [0, 40, 70], 40, true),
        (100, [10, 40], 10, false),
        (1, [0], 1, true),
    ]

    @Test(arguments: cases)
    func nextWrite(_ output: Int, _ offsets: [Int], _ end: Int, _ passing: Bool) {
        let write = ControlLoop.nextWrite(outputCount: output, descriptorOffsets: offsets)
        #expect(write.end == end && write.passing == passing)
    }

    /// Two lines with descriptors, written as far as a socket takes each
    /// time: every descriptor leaves with its line's first byte, no offset
    /// goes below zero, and every byte goes.
    @Test(arguments: [1, 7, 40, 1000])
    func everyDescriptor_leavesWithItsLinesFirstByte(_ socketTakes: Int) {
        var output = 100
        var offsets = [0, 40, 70]
        var sentAt: [Int] = []
        var written = 0
        while output > 0 {
            let (end, passing) = ControlLoop.nextWrite(outputCount: output, descriptorOffsets: offsets)
            let n = min(end, socketTakes)
            if passing {
                sentAt.append(written)
                offsets.removeFirst()
            }
            offsets = offsets.map { $0 - n }
            #expect(offsets.allSatisfy { $0 >= 0 })
            output -= n
            written += n
        }
        #expect(sentAt == [0, 40, 70])
        #expect(written == 100)
    }
}
