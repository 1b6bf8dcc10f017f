import Testing
@testable import ExpenseCore

/// The one duration syntax, read in integers: nothing overflows or is NaN.
@Suite struct DurationTextTests {
    @Test(arguments: [
        ("30", 30_000), ("0.5", 500), ("1.25", 1250), ("250ms", 250), ("5s", 5000), ("1.5m", 90_000), ("2h", 7_200_000),
        ("0", 0), ("0.0001", 0), ("31536000", 31_536_000_000), ("8760h", 31_536_000_000), ("2d", 172_800_000), ("365d", 31_536_000_000),
    ] as [(String, Int64)])
    func validDurations_parse(_ text: String, milliseconds: Int64) {
        #expect(DurationText.milliseconds(text) == milliseconds)
    }

    @Test(arguments: ["", "s", "ms", "-1", "+1", "1e3", "1E3", "inf", "infinity", "nan", "NaN", "0x10", "0x1p4", " 5", "5 ", "5 s",
                      "1.", ".5", "1..5", "1,5", "366d", "5S", "5w", "99999999999", "31536001", "8761h", "1000000000000000000000", "٣"])
    func garbage_isRefused(_ text: String) {
        #expect(DurationText.milliseconds(text) == nil, "'\(text)'")
    }
}
