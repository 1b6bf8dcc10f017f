internal import CPQ

/// A server's answer to one statement: owned, cleared in `deinit`.
final class QueryResult {
    let handle: OpaquePointer

    init(_ handle: OpaquePointer) { self.handle = handle }

    deinit { PQclear(handle) }

    var rowCount: Int { Int(PQntuples(handle)) }

    /// Rows a command changed (`PQcmdTuples`); 0 for commands that report none.
    var changes: Int {
        guard let text = PQcmdTuples(handle) else { return 0 }
        return Int(String(cString: text)) ?? 0
    }
}

@available(*, unavailable)
extension QueryResult: Sendable {}

/// One row of a result, read in binary; valid only inside the closure that
/// receives it. Each accessor decodes the types it names and traps on any
/// other column type: the SQL is ours, so a mismatch is a programmer error.
public struct Row {
    let result: QueryResult
    let index: Int32

    private func type(_ column: Int) -> UInt32 { PQftype(result.handle, Int32(column)) }

    private func withRaw<T>(_ column: Int, _ body: (UnsafeRawBufferPointer) -> T) -> T {
        let count = Int(PQgetlength(result.handle, index, Int32(column)))
        let pointer = PQgetvalue(result.handle, index, Int32(column))
        return body(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    private func bigEndian(_ column: Int) -> UInt64 {
        withRaw(column) { raw in raw.reduce(UInt64(0)) { $0 << 8 | UInt64($1) } }
    }

    public func isNull(_ column: Int) -> Bool { PQgetisnull(result.handle, index, Int32(column)) == 1 }

    /// An integer column (`smallint`, `integer`, `bigint`, `oid`, `xid`, `xid8`).
    public func int64(_ column: Int) -> Int64 {
        if isNull(column) { return 0 }
        let raw = bigEndian(column)
        switch type(column) {
        case TypeOID.int2: return Int64(Int16(truncatingIfNeeded: raw))
        case TypeOID.int4: return Int64(Int32(truncatingIfNeeded: raw))
        case TypeOID.int8, TypeOID.xid8: return Int64(bitPattern: raw)
        case TypeOID.oid, TypeOID.xid: return Int64(UInt32(truncatingIfNeeded: raw))
        default: preconditionFailure("column \(column) has type \(type(column)), not an integer")
        }
    }

    public func int(_ column: Int) -> Int { Int(int64(column)) }
    public func optionalInt64(_ column: Int) -> Int64? { isNull(column) ? nil : int64(column) }

    public func bool(_ column: Int) -> Bool {
        if isNull(column) { return false }
        precondition(type(column) == TypeOID.bool, "column \(column) has type \(type(column)), not boolean")
        return withRaw(column) { $0.first == 1 }
    }

    public func double(_ column: Int) -> Double {
        if isNull(column) { return 0 }
        switch type(column) {
        case TypeOID.float8: return Double(bitPattern: bigEndian(column))
        case TypeOID.float4: return Double(Float(bitPattern: UInt32(truncatingIfNeeded: bigEndian(column))))
        default: return Double(int64(column))
        }
    }

    /// The text of a column; "" for NULL. Use ``optionalString(_:)`` where NULL matters.
    public func string(_ column: Int) -> String { optionalString(column) ?? "" }

    public func optionalString(_ column: Int) -> String? {
        if isNull(column) { return nil }
        switch type(column) {
        case TypeOID.text, TypeOID.varchar, TypeOID.name, TypeOID.bpchar, TypeOID.unknown:
            return withRaw(column) { String(decoding: $0, as: UTF8.self) }
        default:
            preconditionFailure("column \(column) has type \(type(column)), not text")
        }
    }

    /// A `bytea` column's bytes; `nil` for NULL.
    public func bytes(_ column: Int) -> [UInt8]? {
        if isNull(column) { return nil }
        return withBytes(column) { Array($0) }
    }

    /// Calls `body` with a `bytea` column's bytes in place, without copying
    /// them; they are valid only inside `body`.
    public func withBytes<T>(_ column: Int, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        precondition(type(column) == TypeOID.bytea, "column \(column) has type \(type(column)), not bytea")
        let count = Int(PQgetlength(result.handle, index, Int32(column)))
        let pointer = PQgetvalue(result.handle, index, Int32(column))
        return try body(UnsafeRawBufferPointer(start: pointer, count: count))
    }
}
