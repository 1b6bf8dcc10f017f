import ExpenseTestSupport
import FoundationEssentials
import Testing
@testable import ExpenseCore

@Suite struct IdentityTests {
    @Test func transactionID_matchesContractTestVector() {
        #expect(TransactionID.derive(from: "1b4e28ba-2fa1-11d2-883f-0000f87d3b6e") == "cp-0206e11a39722b8b0b0d34")
    }

    @Test func transactionID_isDerivedFromLowercaseUUID() {
        #expect(TransactionID.derive(from: "1B4E28BA-2FA1-11D2-883F-0000F87D3B6E") == "cp-0206e11a39722b8b0b0d34")
    }

    @Test func transactionID_hasTwentyFiveCharacters() {
        for _ in 0..<100 {
            let id = TransactionID.derive(from: ClientID.make())
            #expect(id.count == 25)
            #expect(TransactionID.isValid(id))
        }
    }

    @Test func clientID_isCanonicalLowercase() {
        let id = ClientID.make()
        #expect(ClientID.isCanonical(id))
        #expect(!ClientID.isCanonical(id.uppercased()))
        #expect(!ClientID.isCanonical("1b4e28ba2fa111d2883f0000f87d3b6e"))
        #expect(!ClientID.isCanonical("1b4e28ba-2fa1-11d2-883f-0000f87d3b6g"))
        #expect(!ClientID.isCanonical(""))
    }

    @Test func clientID_isAVersion7UUIDWithTheTimeFirst() throws {
        let id = ClientID.make(milliseconds: 0x0193_7A3B_C4D5)
        #expect(id.hasPrefix("01937a3b-c4d5-7"), "48-bit time, then version 7: \(id)")
        #expect("89ab".contains(id[id.index(id.startIndex, offsetBy: 19)]), "RFC 9562 variant: \(id)")
        // Parsed back by Foundation as the same UUID, of version 7.
        let uuid = try #require(UUID(uuidString: id))
        #expect(uuid.uuidString.lowercased() == id)
        #expect(uuid.uuid.6 >> 4 == 7)
        // Later milliseconds sort later; within one, the random bits differ.
        #expect(ClientID.make(milliseconds: 0x0193_7A3B_C4D6) > ClientID.make(milliseconds: 0x0193_7A3B_C4D5))
        let now = ClientID.make()
        #expect(ClientID.isCanonical(now))
        #expect(now > id)
    }

    /// Every byte in its place: the time's 48 bits first, big-endian; the
    /// generator's words after them, low byte first; version and variant
    /// set over what the generator gave.
    @Test func clientID_isTheTimeThenTheRandomBits_exactly() {
        struct Words: RandomNumberGenerator {
            var words: [UInt64]
            mutating func next() -> UInt64 { words.removeFirst() }
        }
        var ones = Words(words: [.max, .max])
        #expect(ClientID.make(milliseconds: 0x0193_7A3B_C4D5, using: &ones) == "01937a3b-c4d5-7fff-bfff-ffffffffffff")
        var counting = Words(words: [0x0706_0504_0302_0100, 0x0F0E_0D0C_0B0A_0908])
        #expect(ClientID.make(milliseconds: 1, using: &counting) == "00000000-0001-7607-8809-0a0b0c0d0e0f")
        var zeros = Words(words: [0, 0])
        #expect(ClientID.make(milliseconds: -5, using: &zeros) == "00000000-0000-7000-8000-000000000000", "a clock before 1970 counts as 0")
    }

    @Test func clientID_neverRepeats() {
        let ids = (0..<1000).map { _ in ClientID.make() }
        #expect(Set(ids).count == 1000)
    }
}
