@testable import SyncEngine
import Testing

/// The one record of the server (its health and the credentials pause),
/// step by step as the engine changes it.
@Suite struct ServerStatusTests {
    @Test func unknownUntilTheFirstContact() {
        let health = ServerStatus()
        #expect(health.state == .unknown)
        #expect(health.wantsContact)
        #expect(health.health.lastContactMilliseconds == nil && health.health.lastError == nil)
    }

    @Test func outage_isLoggedOnce_andALaterSuccessClearsItsError() {
        var health = ServerStatus()
        health.succeeded(account: "", at: 1000)
        #expect(health.state == .ok && health.health.lastContactMilliseconds == 1000)
        let first = health.unreachable("couldn't connect", at: 2000)
        let second = health.unreachable("couldn't connect", at: 3000)
        #expect(first, "the first failure starts an outage")
        #expect(!second, "the second does not")
        #expect(health.state == .unreachable && health.wantsContact)
        #expect(health.health.lastError == ServerHealth.Failure(errorClass: "transport", message: "couldn't connect", milliseconds: 3000))
        #expect(health.health.lastContactMilliseconds == 1000, "the last contact stays the last answer")
        health.succeeded(account: "", at: 4000)
        #expect(health.state == .ok && health.health.lastError == nil && health.health.lastContactMilliseconds == 4000)
        #expect(!health.wantsContact)
    }

    @Test func answerThatIsAFailure_isTheLastError_butTheServerIsThere() {
        var health = ServerStatus()
        _ = health.unreachable("timeout", at: 1)
        health.failed(account: "", "transient", "503 unavailable", at: 2)
        #expect(health.state == .ok)
        #expect(health.health.lastError?.errorClass == "transient" && health.health.lastError?.milliseconds == 2)
    }

    @Test func refusal_pausesUntilTheTokenChangesOrSyncForces() {
        var health = ServerStatus()
        let pauses = health.refused(tokenGeneration: 3, code: "401", at: 10)
        let again = health.refused(tokenGeneration: 3, code: "401", at: 11)
        #expect(pauses && !again, "one pause, logged once")
        #expect(health.state == .needsCredentials && health.isPaused)
        health.answered(at: 12)
        health.succeeded(account: "", at: 13)
        #expect(health.isPaused, "an answer to a request sent before the refusal does not end it")
        let sameToken = health.resume(tokenGeneration: 3, force: false)
        #expect(sameToken, "the same token: still paused")
        let newToken = health.resume(tokenGeneration: 4, force: false)
        #expect(!newToken, "a new token file ends the pause")
        #expect(health.state == .unknown && health.wantsContact)
        _ = health.refused(tokenGeneration: 4, code: "403", at: 20)
        let forced = health.resume(tokenGeneration: 4, force: true)
        #expect(!forced, "sync ends it with the same token")
        #expect(health.state == .unknown)
        #expect(health.health.lastError?.errorClass == "auth", "until a success says otherwise")
    }

    /// One account's refusal or rejection is its own last error: another
    /// account is told only of its own, and of an outage, which is everyone's.
    @Test func eachAccount_isToldItsOwnLastError_andOutagesOfEveryone() {
        var status = ServerStatus()
        status.succeeded(account: "alice", at: 1)
        _ = status.refused(account: "bob", tokenGeneration: 1, code: "401", at: 2)
        #expect(status.health.lastError?.errorClass == "auth", "the server's record has it")
        #expect(status.lastError(of: "bob")?.message == "401: the server refused the token")
        #expect(status.lastError(of: "alice") == nil, "bob's 401 is not alice's")
        status.failed(account: "alice", "rejected", "422 invalid_field", at: 3)
        #expect(status.lastError(of: "alice")?.message == "422 invalid_field")
        #expect(status.lastError(of: "bob")?.milliseconds == 2, "alice's rejection is not bob's")
        _ = status.unreachable("couldn't connect", at: 4)
        #expect(status.lastError(of: "alice")?.errorClass == "transport" && status.lastError(of: "carol")?.errorClass == "transport")
        status.succeeded(account: "alice", at: 5)
        #expect(status.lastError(of: "alice") == nil && status.lastError(of: "carol") == nil)
        #expect(status.lastError(of: "bob")?.errorClass == "auth", "until one of bob's succeeds")
    }
}
