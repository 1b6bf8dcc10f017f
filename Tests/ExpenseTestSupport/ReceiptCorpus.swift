import ExpenseCore
import Foundation
import ReceiptReading

/// One receipt of the corpus in Tests/Fixtures/receipts (made by its
/// make-receipts.py), with the fields a person reads on it.
public struct CorpusReceipt: Sendable, CustomStringConvertible {
    public let file: String
    public let layout: String
    public let path: String
    public let settings: ReadingSettings
    /// Where the reader must have taken the text from: `recognized` or `text-layer`.
    public let source: String
    /// By the expense's field names: merchant, amount, currency, date.
    public let fields: [String: String]

    public var description: String { file }

    /// The same receipt, as another file (a degraded copy of it).
    public func copy(file: String, path: String) -> CorpusReceipt {
        CorpusReceipt(file: file, layout: layout, path: path, settings: settings, source: source, fields: fields)
    }

    /// The fields `suggestions` got wrong, as `field: expected, read`.
    public func wrongFields(_ suggestions: ReceiptSuggestions) -> [String] {
        let read = Dictionary(uniqueKeysWithValues: suggestions.byField.map { ($0.field, $0.suggestion.value) })
        return fields.keys.sorted().compactMap { field in
            read[field] == fields[field] ? nil : "\(field): \(fields[field] ?? "none") expected, \(read[field] ?? "none") read"
        }
    }
}

public enum ReceiptCorpus {
    public static let directory = "\(BuiltProducts.packageRoot)/Tests/Fixtures/receipts"

    /// The receipts of expected.json, in its order.
    public static func load() throws -> [CorpusReceipt] {
        guard let data = FileManager.default.contents(atPath: "\(directory)/expected.json"),
              case .array(let entries) = try JSONValue.parse(Array(data)) else { throw TestFailure("\(directory)/expected.json is not a JSON array") }
        return try entries.map { entry in
            guard let file = entry["file"]?.stringValue, let layout = entry["layout"]?.stringValue, let source = entry["source"]?.stringValue,
                  case .object(let fields)? = entry["fields"] else { throw TestFailure("expected.json: an entry without file, layout, source and fields") }
            var settings = ReadingSettings()
            settings.dateOrder = entry["date_order"]?.stringValue.flatMap(DateOrder.init(rawValue:))
            if case .array(let names)? = entry["known_merchants"] { settings.knownMerchants = names.compactMap(\.stringValue) }
            return CorpusReceipt(file: file, layout: layout, path: "\(directory)/\(file)", settings: settings, source: source,
                                 fields: fields.compactMapValues(\.stringValue))
        }
    }
}
