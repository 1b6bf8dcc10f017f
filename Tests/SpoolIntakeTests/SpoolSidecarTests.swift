import DaemonSupport
import ExpenseCore
@testable import SpoolIntake
import Testing

@Suite struct SpoolSidecarTests {
    @Test func validSidecar_givesItsFields() throws {
        let text = #"{"merchant":"Blue Bottle","amount":"12.50","currency":"EUR","date":"2026-11-29","category":"Meals","comment":"team\nlunch"}"#
        let fields = try SpoolSidecar.parse(Array(text.utf8))
        #expect(fields == ExpenseFields(merchant: "Blue Bottle", amount: "12.50", currency: "EUR", date: "2026-11-29",
                                        category: "Meals", comment: "team\nlunch"))
    }

    /// A currency code in any case is the code, as from expensectl and the socket.
    @Test func currencyInAnyCase_isStoredUpperCase() throws {
        let fields = try SpoolSidecar.parse(Array(#"{"amount":"10","currency":"eur"}"#.utf8))
        #expect(fields == ExpenseFields(amount: "10.00", currency: "EUR"))
    }

    @Test func taxTag_isTakenAsAddTakesIt() throws {
        let fields = try SpoolSidecar.parse(Array(#"{"merchant":"A","tax_tag":"VAT-20"}"#.utf8))
        #expect(fields == ExpenseFields(merchant: "A", taxTag: "VAT-20"))
        // Blank is none, as for every optional field.
        #expect(try SpoolSidecar.parse(Array(#"{"tax_tag":"  "}"#.utf8)).taxTag == nil)
    }

    @Test func byteOrderMark_atTheStartIsAccepted() throws {
        let fields = try SpoolSidecar.parse([0xEF, 0xBB, 0xBF] + Array(#"{"merchant":"Blue Bottle"}"#.utf8))
        #expect(fields == ExpenseFields(merchant: "Blue Bottle"))
    }

    @Test func emptyObject_isNoFields() throws {
        #expect(try SpoolSidecar.parse(Array("{}".utf8)).isEmpty)
    }

    @Test(arguments: [
        ([0x7B, 0x22, 0xFF, 0x22, 0x3A, 0x31, 0x7D], "sidecar is not valid UTF-8"),
        (Array("".utf8), "sidecar is not valid JSON"),
        (Array("{\"merchant\": ".utf8), "sidecar is not valid JSON"),
        (Array("[1, 2]".utf8), "sidecar must be a JSON object, got an array"),
        (Array("\"text\"".utf8), "sidecar must be a JSON object, got a string"),
        (Array(#"{"merchant":"A","taxtag":"x"}"#.utf8), "sidecar field 'taxtag' is not an expense field"),
        (Array(#"{"tax_tag":"\#(String(repeating: "t", count: 65))"}"#.utf8), "sidecar field tax_tag: longer than 64 characters"),
        ([0xEF, 0xBB] + Array("{}".utf8), "sidecar is not valid UTF-8"),
        ([0xEF, 0xBB, 0xBF, 0xEF, 0xBB, 0xBF] + Array("{}".utf8), "sidecar is not valid JSON"),
        (Array(#"{"vendor":"A"}"#.utf8), "sidecar field 'vendor' is not an expense field"),
        (Array(#"{"a\nb":"A"}"#.utf8), #"sidecar field 'a\x0ab' is not an expense field"#),
        (Array(#"{"amount":12.5,"currency":"EUR"}"#.utf8), "sidecar field 'amount' must be a string, got a number"),
        (Array(#"{"merchant":null}"#.utf8), "sidecar field 'merchant' must be a string, got null"),
        (Array(#"{"amount":"12.50"}"#.utf8), "sidecar field amount: an amount needs a currency"),
        (Array(#"{"amount":"12.505","currency":"EUR"}"#.utf8), "sidecar field amount: has 3 fraction digits"),
        (Array(#"{"currency":"eu1"}"#.utf8), "sidecar field currency: must be three uppercase letters"),
        (Array(#"{"currency":"xyz"}"#.utf8), "sidecar field currency: 'XYZ' is not an ISO 4217 currency code"),
        (Array(#"{"date":"2026-02-30"}"#.utf8), "sidecar field date: 2026-02-30 is not a calendar date"),
        (Array(#"{"merchant":"   "}"#.utf8), "sidecar field merchant: must not be empty"),
    ] as [([UInt8], String)])
    func badSidecar_isRejectedWithAReasonNamingWhatIsWrong(_ bytes: [UInt8], _ reason: String) {
        #expect(throws: SpoolRejection.self) { try SpoolSidecar.parse(bytes) }
        do {
            _ = try SpoolSidecar.parse(bytes)
        } catch {
            #expect(error.reason.hasPrefix(reason), "\(error.reason)")
            #expect(!error.reason.contains("\n"), "one line")
        }
    }

    @Test func reasons_neverHoldFieldValues() {
        do {
            _ = try SpoolSidecar.parse(Array(#"{"merchant":"Secret Shop","amount":"12.505","currency":"EUR"}"#.utf8))
            Issue.record("accepted")
        } catch {
            #expect(!error.reason.contains("Secret"))
            #expect(!error.reason.contains("12.505"))
        }
    }
}
