@testable import DaemonSupport
import Testing

/// `EXPENSED_FAULT` is parsed strictly: a spec it cannot read is refused,
/// never taken for another fault.
@Suite struct FaultPointSpecTests {
    @Test func goodSpecs_parse() throws {
        let armed = try FaultPoints.parse("before-send:kill@3,store-probe:hang,before-ready:sleep=3000,after-response,spool-after-stage:hold@2").get()
        #expect(armed["before-send"] == FaultPoints.Armed(action: .kill, onHit: 3))
        #expect(armed["store-probe"] == FaultPoints.Armed(action: .hang, onHit: 1))
        #expect(armed["before-ready"] == FaultPoints.Armed(action: .sleep(milliseconds: 3000), onHit: 1))
        #expect(armed["after-response"] == FaultPoints.Armed(action: .kill, onHit: 1))
        #expect(armed["spool-after-stage"] == FaultPoints.Armed(action: .hold, onHit: 2))
    }

    @Test(arguments: ["x@", "x@0", "x@-1", "x@1e3", "x@99999999999", "x:sleep=99999999999", "x:sleep=-5", "x:slep=5", "x:", ":kill", "@3"])
    func badSpecs_areRefusedNotGuessed(_ spec: String) {
        #expect(throws: FaultPoints.Problem.self) { try FaultPoints.parse(spec).get() }
    }
}
