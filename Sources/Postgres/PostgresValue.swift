/// A value bound to a statement parameter (`$1`, `$2`, …).
///
/// Numbers, booleans and bytes travel in binary with their type named;
/// text travels as text with its type left to the server, which infers it
/// from where the parameter stands (a `text` column, an `xid8`, a `bigint`).
public enum PostgresValue: Sendable, Equatable {
    case null
    case integer(Int64)
    case double(Double)
    case bool(Bool)
    case text(String)
    case bytes([UInt8])

    /// `.text` for a string, `.null` for `nil`.
    public static func text(_ value: String?) -> PostgresValue { value.map(PostgresValue.text) ?? .null }
    /// `.integer` for a number, `.null` for `nil`.
    public static func integer(_ value: Int64?) -> PostgresValue { value.map(PostgresValue.integer) ?? .null }
}

/// The type OIDs this wrapper reads and writes; fixed in PostgreSQL's
/// catalog (`pg_type.dat`) and the same on every server.
enum TypeOID {
    static let bool: UInt32 = 16
    static let bytea: UInt32 = 17
    static let name: UInt32 = 19
    static let int8: UInt32 = 20
    static let int2: UInt32 = 21
    static let int4: UInt32 = 23
    static let text: UInt32 = 25
    static let oid: UInt32 = 26
    static let xid: UInt32 = 28
    static let float4: UInt32 = 700
    static let float8: UInt32 = 701
    static let unknown: UInt32 = 705
    static let bpchar: UInt32 = 1042
    static let varchar: UInt32 = 1043
    static let xid8: UInt32 = 5069
}

/// Parameters laid out as libpq wants them: one buffer, with a type, an
/// offset, a length and a format per value.
struct Parameters {
    var types: [UInt32] = []
    var offsets: [Int?] = []
    var lengths: [Int32] = []
    var formats: [Int32] = []
    var buffer: [UInt8] = []

    /// - Throws: ``PostgresError`` for text holding a NUL byte, which
    ///   PostgreSQL's text cannot store (and libpq would cut it there).
    init(_ values: [PostgresValue]) throws(PostgresError) {
        for (index, value) in values.enumerated() {
            switch value {
            case .null:
                append(type: 0, bytes: nil, format: 0)
            case .integer(let v):
                append(type: TypeOID.int8, bytes: withUnsafeBytes(of: v.bigEndian, Array.init), format: 1)
            case .double(let v):
                append(type: TypeOID.float8, bytes: withUnsafeBytes(of: v.bitPattern.bigEndian, Array.init), format: 1)
            case .bool(let v):
                append(type: TypeOID.bool, bytes: [v ? 1 : 0], format: 1)
            case .text(let v):
                guard !v.utf8.contains(0) else {
                    throw PostgresError(.client, message: "parameter $\(index + 1) is text holding a NUL byte, which PostgreSQL cannot store")
                }
                // Text format ends at the NUL libpq looks for.
                append(type: 0, bytes: Array(v.utf8) + [0], format: 0)
            case .bytes(let v):
                append(type: TypeOID.bytea, bytes: v, format: 1)
            }
        }
        // One byte more than the values need: an empty value (bytea '')
        // still gets a pointer that is not NULL, which would mean SQL NULL.
        buffer.append(0)
    }

    private mutating func append(type: UInt32, bytes: [UInt8]?, format: Int32) {
        types.append(type)
        formats.append(format)
        if let bytes {
            offsets.append(buffer.count)
            lengths.append(Int32(bytes.count))
            buffer.append(contentsOf: bytes)
        } else {
            offsets.append(nil)
            lengths.append(0)
        }
    }

    /// The types as a cache key: a statement is prepared once per SQL text
    /// and parameter types.
    var signature: String { types.map(String.init).joined(separator: ",") }

    /// Calls `body` with pointers to each value (`nil` for NULL), valid only inside it.
    func withPointers<T>(_ body: (_ values: [UnsafePointer<CChar>?], _ lengths: [Int32], _ formats: [Int32]) throws -> T) rethrows -> T {
        try buffer.withUnsafeBytes { raw in
            let base = raw.baseAddress!.assumingMemoryBound(to: CChar.self)
            return try body(offsets.map { $0.map { base + $0 } }, lengths, formats)
        }
    }
}
