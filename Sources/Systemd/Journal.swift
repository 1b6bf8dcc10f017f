#if canImport(Glibc)
import Glibc
#endif
internal import CSystemd
import Posix

/// Structured entries to the journal (`sd_journal_sendv(3)`).
public enum Journal {
    /// Sends one entry made of `FIELD=value` pairs (MESSAGE and PRIORITY among
    /// them). Field names must be uppercase ASCII, digits and underscores.
    /// - Returns: false when the journal refused it (none running, say).
    @discardableResult
    public static func send(_ fields: [(String, String)]) -> Bool {
        // One buffer holds every field; the iovecs point into it.
        var buffer: [UInt8] = []
        var ranges: [Range<Int>] = []
        for (name, value) in fields {
            let start = buffer.count
            buffer.append(contentsOf: name.utf8)
            buffer.append(UInt8(ascii: "="))
            buffer.append(contentsOf: value.utf8)
            ranges.append(start..<buffer.count)
        }
        return buffer.withUnsafeMutableBytes { raw in
            var iov = ranges.map { iovec(iov_base: raw.baseAddress! + $0.lowerBound, iov_len: $0.count) }
            return sd_journal_sendv(&iov, Int32(iov.count)) == 0
        }
    }

    /// True when stderr is connected to the journal: `JOURNAL_STREAM` names
    /// the device and inode of our stderr (systemd.exec(5)).
    public static var isStderrConnected: Bool {
        guard let stream = Environment["JOURNAL_STREAM"] else { return false }
        let parts = stream.split(separator: ":")
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        var st = stat()
        guard fstat(2, &st) == 0 else { return false }
        return UInt64(st.st_dev) == device && UInt64(st.st_ino) == inode
    }
}

