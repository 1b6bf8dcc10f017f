import Testing
@testable import ControlProtocol
import ExpenseCore

/// `account` and `all_accounts`, which every op takes: parsed, encoded
/// back, and refused with the member named when they are not what the
/// protocol says.
@Suite struct AccountSelectionParseTests {
    private func parse(_ text: String) -> Result<ControlRequest, ControlFailure> {
        ControlRequest.parse(Array(text.utf8))
    }

    @Test(arguments: [
        (#"{"op":"list"}"#, ControlRequest.AccountSelection.caller),
        (#"{"op":"list","account":"bob"}"#, .account("bob")),
        (#"{"op":"status","account":""}"#, .account("")),
        (#"{"op":"show","ref":"cp-1","all_accounts":true}"#, .all),
        (#"{"op":"watch","all_accounts":false}"#, .caller),
        (#"{"op":"list","account":null}"#, .caller),
    ])
    func selection_isParsedOnAnyOp_andEncodedBackTheSame(_ line: String, _ expected: ControlRequest.AccountSelection) throws {
        let request = try parse(line).get()
        #expect(request.accounts == expected)
        #expect(try ControlRequest.parse(request.json.serializedBytes()).get() == request)
    }

    @Test(arguments: [
        (#"{"op":"list","account":7}"#, "account"),
        (#"{"op":"list","account":["bob"]}"#, "account"),
        (#"{"op":"list","account":"../etc"}"#, "account"),
        (#"{"op":"list","account":"bo\nb"}"#, "account"),
        (#"{"op":"list","all_accounts":"yes"}"#, "all_accounts"),
        (#"{"op":"list","all_accounts":1}"#, "all_accounts"),
        (#"{"op":"list","account":"bob","all_accounts":true}"#, "all_accounts"),
    ])
    func badSelection_isRefusedNamingTheMember(_ line: String, _ field: String) {
        guard case .failure(let failure) = parse(line) else {
            Issue.record("\(line) was accepted")
            return
        }
        #expect(failure.code == .invalidField, "\(line)")
        #expect(failure.field == field, "\(line)")
    }

    @Test func accountTooLong_isRefused() {
        let name = String(repeating: "a", count: 256)
        guard case .failure(let failure) = parse(#"{"op":"list","account":"\#(name)"}"#) else {
            Issue.record("a 256-byte account was accepted")
            return
        }
        #expect(failure.field == "account")
    }
}
