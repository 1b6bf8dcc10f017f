import Foundation
import Testing
@testable import ControlProtocol
import ExpenseCore

/// docs/control-protocol.md's table of operations against the parser: for
/// every op, each member the document lists is taken, a required one left
/// out is `missing_field` and one of the wrong type `invalid_field`, both
/// naming it, and a member it does not list is `unknown_field`.
@Suite struct ControlProtocolDocTests {
    /// (op, member, optional) from the "Operations" table.
    static func documentedMembers() throws -> [(op: String, members: [(name: String, optional: Bool)])] {
        let path = #filePath.split(separator: "/").dropLast(3).joined(separator: "/")
        let text = try String(contentsOfFile: "/\(path)/docs/control-protocol.md", encoding: .utf8)
        guard let section = text.components(separatedBy: "## Operations").dropFirst().first,
              let table = section.components(separatedBy: "\n\n").first(where: { $0.hasPrefix("| op ") }) else { throw DocError() }
        var rows: [(String, [(String, Bool)])] = []
        for line in table.split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            let op = cells[1].trimmingCharacters(in: CharacterSet(charactersIn: "`"))
            // Each member: a backticked name, then "(optional …)" or anything else.
            var members: [(String, Bool)] = []
            let parts = cells[2].components(separatedBy: "`")
            var index = 1
            while index < parts.count {
                let name = parts[index]
                let after = index + 1 < parts.count ? parts[index + 1] : ""
                if name.allSatisfy({ $0.isLowercase || $0 == "_" }) && !["true", "server", "mine"].contains(name) {
                    members.append((name, after.hasPrefix(" (optional")))
                }
                index += 2
            }
            rows.append((op, members))
        }
        return rows
    }

    struct DocError: Error {}

    /// A valid value for each member, and one of the wrong type.
    static let valid: [String: String] = [
        "ref": #""cp-0206e11a39722b8b0b0d34""#, "set": #"{"comment":"x"}"#, "take": #""server""#,
        "expense": #"{"merchant":"M","amount":"1.00","currency":"EUR","date":"2026-11-29"}"#,
        "client_id": #""1b4e28ba-2fa1-11d2-883f-0000f87d3b6e""#, "receipt": "false", "refresh": "true",
        "state": #""queued""#, "incomplete": "true", "since": #""2026-01-01""#, "until": #""2026-12-31""#, "merchant": #""Bottle""#,
        "category": #""Meals""#, "sort": #""amount""#, "reverse": "true", "limit": "50", "offset": "0", "totals": "true",
        "receipt_path": #""/home/ann/r.jpg""#, "changes": "true", "original": "true", "now": "true",
    ]
    static let wrongType: [String: String] = [
        "ref": "5", "set": #""comment""#, "take": "true", "expense": "[]", "client_id": "5", "receipt": #""yes""#, "refresh": "1", "receipt_path": "7",
        "state": "5", "incomplete": "1", "since": "20260101", "until": "[]", "merchant": "{}", "category": "false", "sort": "1",
        "reverse": #""yes""#, "limit": #""50""#, "offset": "1.5", "totals": #""no""#, "changes": #""yes""#, "original": "1", "now": #""yes""#,
    ]

    static func request(_ op: String, _ members: [String: String]) -> [UInt8] {
        let body = members.sorted { $0.key < $1.key }.map { "\"\($0.key)\":\($0.value)" }
        return Array(("{" + (["\"op\":\"\(op)\""] + body).joined(separator: ",") + "}").utf8)
    }

    @Test func everyDocumentedOp_isParsed_andMissingInvalidAndUnknownMembersAreNamed() throws {
        let rows = try Self.documentedMembers()
        #expect(rows.map(\.op) == ControlRequest.operations, "the document lists every op, in order")
        for (op, members) in rows {
            let all = Dictionary(uniqueKeysWithValues: members.map { ($0.name, Self.valid[$0.name] ?? "null") })
            for member in members { #expect(Self.valid[member.name] != nil, "\(op): no sample for \(member.name)") }
            if case .failure(let failure) = ControlRequest.parse(Self.request(op, all)) {
                Issue.record("\(op) with every member: \(failure)")
            }
            for member in members {
                var without = all
                without[member.name] = nil
                let missing = ControlRequest.parse(Self.request(op, without))
                if member.optional {
                    if case .failure(let failure) = missing { Issue.record("\(op) without optional \(member.name): \(failure)") }
                } else {
                    guard case .failure(let failure) = missing else {
                        Issue.record("\(op) without \(member.name) was accepted")
                        continue
                    }
                    #expect(failure.code == .missingField && failure.field == member.name, "\(op) without \(member.name): \(failure)")
                }
                var wrong = all
                wrong[member.name] = Self.wrongType[member.name]
                guard case .failure(let failure) = ControlRequest.parse(Self.request(op, wrong)) else {
                    Issue.record("\(op) with a wrong \(member.name) was accepted")
                    continue
                }
                #expect(failure.code == .invalidField && failure.field == member.name, "\(op) with a wrong \(member.name): \(failure)")
            }
            var extra = all
            extra["bogus"] = "1"
            guard case .failure(let failure) = ControlRequest.parse(Self.request(op, extra)) else {
                Issue.record("\(op) with an unknown member was accepted")
                continue
            }
            #expect(failure.code == .unknownField && failure.field == "bogus", "\(op) with bogus: \(failure)")
        }
    }

    /// The fields of an add: one left out of an expense without a receipt
    /// is missing; one that is there but wrong is invalid.
    @Test func addFields_missingAgainstInvalid() throws {
        for name in ["merchant", "amount", "currency", "date"] {
            var expense: [String: JSONValue] = ["merchant": "M", "amount": "1.00", "currency": "EUR", "date": "2026-11-29"]
            expense[name] = nil
            let line = JSONValue.object(["op": "add", "expense": .object(expense)]).serializedBytes()
            guard case .failure(let failure) = ControlRequest.parse(line) else {
                Issue.record("add without \(name) was accepted")
                continue
            }
            #expect(failure.code == .missingField && failure.field == name, "\(failure)")
            expense[name] = .string("")
            guard case .failure(let invalid) = ControlRequest.parse(JSONValue.object(["op": "add", "expense": .object(expense)]).serializedBytes()) else {
                Issue.record("add with an empty \(name) was accepted")
                continue
            }
            #expect(invalid.code == .invalidField && invalid.field == name, "\(invalid)")
        }
    }

    @Test func addAndEdit_storeTheNormalFormAndEditsClear() throws {
        let add = try ControlRequest.parse(Array(#"{"op":"add","expense":{"merchant":"M","amount":"10","currency":"EUR","date":"2026-11-29","comment":null,"category":""}}"#.utf8)).get()
        #expect(add.command == .add(fields: ExpenseFields(merchant: "M", amount: "10.00", currency: "EUR", date: "2026-11-29"), clientID: nil, hasReceipt: false))
        let edit = try ControlRequest.parse(Array(#"{"op":"edit","ref":"cp-1","set":{"comment":null,"tax_tag":"","amount":"5","currency":"JPY"}}"#.utf8)).get()
        var expected = ExpenseFields(amount: "5", currency: "JPY")
        expected.clear("comment")
        expected.clear("tax_tag")
        #expect(edit.command == .edit(ref: "cp-1", fields: expected))
    }
}
