import Testing
@testable import ExpenseCore

/// Totals are exact: the parts SQL sums, put together without floating point.
@Suite struct DecimalSumTests {
    /// Splits an amount as the listing index stores it.
    static func parts(_ amount: String) -> (units: Int64, fraction: Int64, digits: Int) {
        let negative = amount.hasPrefix("-")
        let pieces = amount.split(separator: ".", maxSplits: 1)
        let units = Int64(pieces[0])!
        guard pieces.count == 2 else { return (units, 0, 0) }
        return (units, Int64(pieces[1])! * (negative ? -1 : 1), pieces[1].count)
    }

    static func sum(_ amounts: [String], digits: Int) -> String {
        var sum = DecimalSum(digits: digits)
        for amount in amounts {
            let p = parts(amount)
            sum.add(units: p.units, fraction: p.fraction, fractionDigits: p.digits)
        }
        return sum.text
    }

    @Test(arguments: [
        (["12.50", "3.00"], 2, "15.50"),
        (["0.10", "0.20"], 2, "0.30"),
        (["0.99", "0.99", "0.99"], 2, "2.97"),
        (["-0.50", "0.20"], 2, "-0.30"),
        (["-12.50", "12.50"], 2, "0.00"),
        (["-1.25", "-2.80"], 2, "-4.05"),
        (["5.00", "-0.01"], 2, "4.99"),
        (["-5.00", "0.01"], 2, "-4.99"),
        (["1500", "-2000"], 0, "-500"),
        (["1.125", "0.875"], 3, "2.000"),
        ([], 2, "0.00"),
        (["999999999999.99", "999999999999.99"], 2, "1999999999999.98"),
    ] as [([String], Int, String)])
    func sums_areExact(_ amounts: [String], digits: Int, expected: String) {
        #expect(Self.sum(amounts, digits: digits) == expected)
    }

    /// A thousand amounts of 0.10: floating point would drift, this does not.
    @Test func manyCents_addUpExactly() {
        #expect(Self.sum(Array(repeating: "0.10", count: 1000), digits: 2) == "100.00")
    }
}
