/// CRC-32 as PNG uses it (ISO 3309, polynomial 0xEDB88320 reflected, as
/// in zlib's `crc32`): every PNG chunk ends in the CRC of its type and
/// data. None of the C libraries the product links offers it (libcrypto
/// has digests, not checksums), and it is a table and one loop.
public struct CRC32: Sendable {
    private var state: UInt32 = 0xFFFF_FFFF

    public init() {}

    /// The checksum of the bytes so far.
    public var value: UInt32 { state ^ 0xFFFF_FFFF }

    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        var crc = state
        Self.table.withUnsafeBufferPointer { table in
            for byte in bytes {
                crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8)
            }
        }
        state = crc
    }

    public mutating func update(_ bytes: some Collection<UInt8>) {
        let array = Array(bytes)
        array.withUnsafeBytes { update($0) }
    }

    /// The checksum of `bytes`.
    public static func checksum(_ bytes: some Collection<UInt8>) -> UInt32 {
        var crc = CRC32()
        crc.update(bytes)
        return crc.value
    }

    private static let table: [UInt32] = (0..<256).map { n in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }
}
