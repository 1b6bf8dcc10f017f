import Testing
@testable import ExpenseCore

@Suite struct ValidationTests {
    @Test(arguments: ["12.50", "-3.00", "0", "0.5", "999999999999.99", "7"])
    func amount_acceptsDecimalStrings(_ amount: String) throws {
        try Validation.checkAmount(amount, currency: "EUR")
    }

    @Test(arguments: ["12.505", "12.", ".5", "+12", "1e3", "12,50", "", "-", "007", "1 2", "12.5a", "1234567890123", "NaN", "--1"])
    func amount_rejectsOtherText(_ amount: String) {
        #expect(throws: FieldError.self) { try Validation.checkAmount(amount, currency: "EUR") }
    }

    @Test func amount_followsCurrencyMinorUnits() throws {
        try Validation.checkAmount("1500", currency: "JPY")
        #expect(throws: FieldError.self) { try Validation.checkAmount("15.5", currency: "JPY") }
        try Validation.checkAmount("1.125", currency: "BHD")
        #expect(throws: FieldError.self) { try Validation.checkAmount("1.1255", currency: "BHD") }
    }

    @Test(arguments: ["EUR", "USD", "JPY", "CHF"])
    func currency_acceptsISOCodes(_ code: String) throws {
        try Validation.checkCurrency(code)
    }

    @Test(arguments: ["eur", "EURO", "XYZ", "", "E1R", "XAU"])
    func currency_rejectsOthers(_ code: String) {
        #expect(throws: FieldError.self) { try Validation.checkCurrency(code) }
    }

    @Test(arguments: ["2026-11-29", "2024-02-29", "2000-02-29", "1900-01-01", "9999-12-31"])
    func date_acceptsCalendarDates(_ date: String) throws {
        try Validation.checkDate(date)
    }

    @Test(arguments: ["2026-02-29", "1900-02-29", "2026-13-01", "2026-00-10", "2026-04-31", "2026-1-1", "26-11-29", "2026/11/29", "1899-12-31", "2026-11-29T00:00"])
    func date_rejectsOthers(_ date: String) {
        #expect(throws: FieldError.self) { try Validation.checkDate(date) }
    }

    @Test func text_limitsAndControlCharacters() throws {
        try Validation.checkText(String(repeating: "a", count: 200), field: "merchant")
        #expect(throws: FieldError.self) { try Validation.checkText(String(repeating: "a", count: 201), field: "merchant") }
        #expect(throws: FieldError.self) { try Validation.checkText("a\nb", field: "merchant") }
        #expect(throws: FieldError.self) { try Validation.checkText("   ", field: "merchant") }
        try Validation.checkText("line one\nline two", field: "comment")
    }

    @Test func create_withoutReceipt_needsTheFourFields() throws {
        let complete = ExpenseFields(merchant: "Blue Bottle", amount: "12.50", currency: "EUR", date: "2026-11-29")
        try Validation.checkCreate(complete, hasReceipt: false)
        var missing = complete
        missing.date = nil
        #expect(throws: FieldError(field: "date", reason: "required for an expense without a receipt", isMissing: true)) {
            try Validation.checkCreate(missing, hasReceipt: false)
        }
        try Validation.checkCreate(ExpenseFields(), hasReceipt: true)
        // The first missing field is the error's; the others are named after it.
        let merchantOnly = ExpenseFields(merchant: "Blue Bottle")
        #expect(throws: FieldError(field: "amount", reason: "required for an expense without a receipt, as are currency and date", isMissing: true)) {
            try Validation.checkCreate(merchantOnly, hasReceipt: false)
        }
        #expect(throws: FieldError(field: "merchant", reason: "required for an expense without a receipt, as are amount, currency and date", isMissing: true)) {
            try Validation.checkCreate(ExpenseFields(), hasReceipt: false)
        }
        #expect(throws: FieldError(field: "currency", reason: "required for an expense without a receipt, as is date", isMissing: true)) {
            try Validation.checkCreate(ExpenseFields(merchant: "Blue Bottle", amount: "12.50"), hasReceipt: false)
        }
    }

    @Test func aControlCharacter_isNamedByItsCodePoint() {
        #expect(throws: FieldError(field: "merchant", reason: "contains a control character (U+0001)")) {
            try Validation.check(ExpenseFields(merchant: "a\u{1}b"))
        }
        #expect(throws: FieldError(field: "comment", reason: "contains a control character (U+007F)")) {
            try Validation.check(ExpenseFields(comment: "a\u{7F}b"))
        }
    }

    @Test func amount_withoutCurrency_isRejectedOnCreate() {
        #expect(throws: FieldError.self) {
            try Validation.checkCreate(ExpenseFields(amount: "1.00"), hasReceipt: true)
        }
    }

    @Test func fieldError_neverContainsTheValue() {
        do {
            try Validation.checkAmount("123.456", currency: "EUR")
            Issue.record("expected an error")
        } catch {
            #expect(!error.description.contains("123.456"))
        }
    }
}

@Suite struct ReceiptKindTests {
    @Test func detect_recognizesMagicNumbers() {
        #expect(ReceiptKind.detect([0xFF, 0xD8, 0xFF, 0xE0, 0, 0]) == .jpeg)
        #expect(ReceiptKind.detect([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0]) == .png)
        #expect(ReceiptKind.detect(Array("%PDF-1.7\n".utf8)) == .pdf)
        #expect(ReceiptKind.detect(Array("GIF89a".utf8)) == nil)
        #expect(ReceiptKind.detect([]) == nil)
        #expect(ReceiptKind.detect([0xFF, 0xD8]) == nil)
    }
}

@Suite struct TimestampTests {
    @Test func format_isRFC3339UTCWithMilliseconds() {
        #expect(Timestamp.format(milliseconds: 0) == "1970-01-01T00:00:00.000Z")
        #expect(Timestamp.format(milliseconds: 1_796_030_102_123) == "2026-11-30T09:15:02.123Z")
        #expect(Timestamp.format(milliseconds: 951_782_400_000) == "2000-02-29T00:00:00.000Z")
    }

    @Test func parse_roundTrips() {
        for ms: Int64 in [0, 1, 999, 1_796_030_102_123, 4_102_444_800_000] {
            #expect(Timestamp.parse(Timestamp.format(milliseconds: ms)) == ms)
        }
        #expect(Timestamp.parse("2026-11-30T09:15:02Z") == 1_796_030_102_000)
        #expect(Timestamp.parse("2026-11-30 09:15:02Z") == nil)
        #expect(Timestamp.parse("garbage") == nil)
    }
}
