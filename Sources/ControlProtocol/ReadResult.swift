import ExpenseCore

/// `read`'s answer: what a reading of the expense's receipt found, field
/// by field, and whether the expense took each (docs/control-protocol.md).
public struct ReadResult: ControlResult, Equatable {
    /// One field the reading suggested.
    public struct Field: Sendable, Equatable {
        public var field: String
        public var value: String
        /// 0...1.
        public var confidence: Double
        /// The parser's rule, in its own words.
        public var note: String
        /// True when the expense took it; false when it keeps the value a
        /// person typed or a sidecar gave.
        public var applied: Bool

        public init(field: String, value: String, confidence: Double, note: String, applied: Bool) {
            self.field = field
            self.value = value
            self.confidence = confidence
            self.note = note
            self.applied = applied
        }
    }

    public var transactionID: String
    /// In the expense's field order; empty when nothing was read.
    public var fields: [Field]

    public init(transactionID: String, fields: [Field]) {
        self.transactionID = transactionID
        self.fields = fields
    }

    public var json: JSONValue {
        ["transaction_id": .string(transactionID),
         "fields": .array(fields.map { field in
             ["field": .string(field.field), "value": .string(field.value), "confidence": .number(field.confidence),
              "note": .string(field.note), "applied": .bool(field.applied)]
         })]
    }

    public init(json: JSONValue) throws(ControlDecodingError) {
        let m = try Members(json, path: "result")
        var fields: [Field] = []
        for (item, path) in try m.array("fields") {
            let f = try Members(item, path: path)
            fields.append(Field(field: try f.string("field"), value: try f.string("value"), confidence: try f.number("confidence"),
                                note: try f.string("note"), applied: try f.bool("applied")))
        }
        self.init(transactionID: try m.string("transaction_id"), fields: fields)
    }
}
