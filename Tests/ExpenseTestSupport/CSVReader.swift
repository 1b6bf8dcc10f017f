/// An RFC 4180 reader, strict, for checking what the server exports:
/// every record must end with CRLF, a quote may appear only doubled
/// inside a quoted field, and every record must have as many fields as
/// the first.
public enum CSVReader {
    public static func parse(_ bytes: [UInt8]) throws -> [[String]] {
        var records: [[String]] = []
        var record: [String] = []
        var field: [UInt8] = []
        var index = 0
        var atFieldStart = true
        while index < bytes.count {
            let b = bytes[index]
            if atFieldStart && b == 0x22 {
                // A quoted field: up to the quote that is not doubled.
                index += 1
                while true {
                    guard index < bytes.count else { throw TestFailure("CSV: unterminated quoted field in record \(records.count + 1)") }
                    if bytes[index] == 0x22 {
                        if index + 1 < bytes.count && bytes[index + 1] == 0x22 {
                            field.append(0x22)
                            index += 2
                            continue
                        }
                        index += 1
                        break
                    }
                    field.append(bytes[index])
                    index += 1
                }
                atFieldStart = false
                guard index < bytes.count, bytes[index] == 0x2C || bytes[index] == 0x0D else {
                    throw TestFailure("CSV: text after a closing quote in record \(records.count + 1)")
                }
                continue
            }
            atFieldStart = false
            switch b {
            case 0x2C:
                record.append(String(decoding: field, as: UTF8.self))
                field = []
                atFieldStart = true
                index += 1
            case 0x0D:
                guard index + 1 < bytes.count, bytes[index + 1] == 0x0A else { throw TestFailure("CSV: CR without LF in record \(records.count + 1)") }
                record.append(String(decoding: field, as: UTF8.self))
                field = []
                records.append(record)
                record = []
                atFieldStart = true
                index += 2
            case 0x22, 0x0A:
                throw TestFailure("CSV: a bare quote or LF in an unquoted field of record \(records.count + 1)")
            default:
                field.append(b)
                index += 1
            }
        }
        guard record.isEmpty && field.isEmpty else { throw TestFailure("CSV: the last record does not end with CRLF") }
        if let width = records.first?.count, let bad = records.firstIndex(where: { $0.count != width }) {
            throw TestFailure("CSV: record \(bad + 1) has \(records[bad].count) fields, the header \(width)")
        }
        return records
    }
}
