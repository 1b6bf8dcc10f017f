import Digest
import ExpenseTestSupport
import Foundation
import Synchronization

/// What one run measured.
struct Measurement {
    var requests = 0
    var bytes = 0
    var failures = 0
    var latencies: [UInt64] = []
    var seconds = 0.0

    var perSecond: Double { Double(requests) / seconds }
    var mibPerSecond: Double { Double(bytes) / seconds / 1_048_576 }

    func percentile(_ p: Double) -> Double {
        guard !latencies.isEmpty else { return .nan }
        let sorted = latencies.sorted()
        let index = min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)
        return Double(sorted[max(0, index)]) / 1_000_000
    }
}

/// Runs `clients` threads, each on its own keep-alive connection, for
/// `seconds`. `step` performs one measured request and returns the bytes
/// it sent, or nil when the answer was wrong.
func run(clients: Int, seconds: Double, port: UInt16,
         step: @escaping @Sendable (HTTPConnection, Int, Int) throws -> (bytes: Int, nanoseconds: UInt64)?) -> Measurement {
    run(clients: clients, seconds: seconds, connect: { try HTTPConnection(port: port) }, step: step)
}

/// Runs `clients` threads, each with a connection of its own from
/// `connect` (made again after a failed step), for `seconds`.
func run<Connection>(clients: Int, seconds: Double, connect: @escaping @Sendable () throws -> Connection,
                     step: @escaping @Sendable (Connection, Int, Int) throws -> (bytes: Int, nanoseconds: UInt64)?) -> Measurement {
    let total = Mutex(Measurement())
    let start = DispatchTime.now().uptimeNanoseconds
    let deadline = start + UInt64(seconds * 1e9)
    let group = DispatchGroup()
    for client in 0..<clients {
        group.enter()
        let thread = Thread {
            var local = Measurement()
            local.latencies.reserveCapacity(100_000)
            do {
                var connection = try connect()
                var sequence = 0
                while DispatchTime.now().uptimeNanoseconds < deadline {
                    sequence += 1
                    do {
                        if let result = try step(connection, client, sequence) {
                            local.requests += 1
                            local.bytes += result.bytes
                            local.latencies.append(result.nanoseconds)
                        } else {
                            local.failures += 1
                        }
                    } catch {
                        local.failures += 1
                        connection = try connect()
                    }
                }
            } catch {
                local.failures += 1
            }
            total.withLock {
                $0.requests += local.requests
                $0.bytes += local.bytes
                $0.failures += local.failures
                $0.latencies += local.latencies
            }
            group.leave()
        }
        thread.stackSize = 1 << 20
        thread.start()
    }
    group.wait()
    var result = total.withLock { $0 }
    result.seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    return result
}

func timed<T>(_ body: () throws -> T) rethrows -> (T, UInt64) {
    let t0 = DispatchTime.now().uptimeNanoseconds
    let message = try body()
    return (message, DispatchTime.now().uptimeNanoseconds - t0)
}

/// About 300 bytes, like an expense the daemon sends.
let createBody = Array("""
    {"merchant":"Blue Bottle Coffee","amount":"12.50","currency":"EUR","date":"2026-11-29",\
    "category":"Meals","comment":"team lunch with the field sales group after the quarterly review",\
    "device_id":"bench-0d6f2c1e-5a7b-4f8e-9c3d-2b1a0f9e8d7c","device_seq":17,"created_at_device":"2026-11-29T12:01:00Z"}
    """.utf8)

let jsonType = ("Content-Type", "application/json")

/// Durable creates with a fresh key each, client `n` as user `tokens[n % count]`.
func measureCreates(clients: Int, seconds: Double, port: UInt16, tokens: [String]) -> Measurement {
    run(clients: clients, seconds: seconds, port: port) { connection, client, _ in
        let key = UUID().uuidString.lowercased()
        let (message, ns) = try timed {
            try connection.request("POST", "/v1/expenses", headers: [
                ("Authorization", "Bearer \(tokens[client % tokens.count])"), jsonType, ("Idempotency-Key", "\"\(key)\""),
            ], body: createBody)
        }
        return message.status == 201 ? (createBody.count, ns) : nil
    }
}

/// Makes `count` expenses for uploads to go to, with 16 clients, before
/// the measured run, so the figures are the uploads' alone.
func prepareExpenses(_ count: Int, port: UInt16, token: String) -> [String] {
    let ids = Mutex<[String]>([])
    let done = DispatchGroup()
    for client in 0..<16 {
        done.enter()
        Thread {
            defer { done.leave() }
            guard let connection = try? HTTPConnection(port: port) else { return }
            for _ in stride(from: client, to: count, by: 16) {
                guard let created = try? connection.request("POST", "/v1/expenses", headers: [
                    ("Authorization", "Bearer \(token)"), jsonType, ("Idempotency-Key", UUID().uuidString.lowercased()),
                ], body: Array("{}".utf8)), created.status == 201, let id = created.json?["transaction_id"] as? String else { continue }
                ids.withLock { $0.append(id) }
            }
        }.start()
    }
    done.wait()
    return ids.withLock { $0 }
}

/// Receipt uploads of `size` bytes onto expenses made beforehand.
func measureUploads(size: Int, clients: Int, seconds: Double, port: UInt16, token: String) -> Measurement {
    var bytes = [UInt8](repeating: 0, count: size)
    for i in bytes.indices { bytes[i] = UInt8(truncatingIfNeeded: i &* 2_654_435_761 >> 13) }
    bytes.replaceSubrange(0..<8, with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
    let digest = "sha-256=:\(Base64.encode(SHA256.hash(bytes))):"
    let body = bytes
    let auth = ("Authorization", "Bearer \(token)")
    // More than the run can use: about twice the uploads a fast disk takes.
    let expenseIDs = prepareExpenses(Int(seconds * (size < 1 << 20 ? 1500 : 100)), port: port, token: token)
    let nextExpense = Mutex(0)
    return run(clients: clients, seconds: seconds, port: port) { connection, _, _ in
        let index = nextExpense.withLock { n -> Int in n += 1; return n - 1 }
        var id = index < expenseIDs.count ? expenseIDs[index] : nil
        if id == nil {
            // Ran out: make one now (its time is not measured).
            let created = try connection.request("POST", "/v1/expenses", headers: [auth, jsonType, ("Idempotency-Key", UUID().uuidString.lowercased())],
                                                 body: Array("{}".utf8))
            id = created.json?["transaction_id"] as? String
        }
        guard let id else { return nil }
        let (message, ns) = try timed {
            try connection.request("PUT", "/v1/expenses/\(id)/receipt", headers: [
                auth, ("Content-Type", "image/png"), ("Repr-Digest", digest), ("Idempotency-Key", UUID().uuidString.lowercased()),
            ], body: body)
        }
        return message.status == 200 ? (body.count, ns) : nil
    }
}

func sizeLabel(_ size: Int) -> String { size >= 1 << 20 ? "\(size >> 20) MiB" : "\(size >> 10) KiB" }
