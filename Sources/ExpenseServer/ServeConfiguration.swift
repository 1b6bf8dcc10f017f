import ExpenseCore
import HTTPD
import Posix
import ServerAPI
import ServerWeb

/// Everything `expense-server serve` is told (docs/server.md, "Options").
struct ServeConfiguration: Sendable, Equatable {
    var listen = SocketAddress(family: .ipv4, host: "127.0.0.1", port: 8080)
    var dataDirectory = ""
    /// Where the data is (`--data-dir`, `--database`).
    var storage = StorageLocation.sqlite(dataDirectory: "", databasePath: nil)
    /// Connections to PostgreSQL per process (`--database-pool`).
    var databasePoolSize = 16
    /// Largest receipt accepted, enforced from `Content-Length` before any byte is read.
    var receiptMaxBytes: Int64 = 25 << 20
    /// Largest JSON body accepted.
    var jsonMaxBytes = 64 << 10
    var maxConnections = 256
    var maxConnectionsPerAddress = 0
    /// Seconds a connection may stay silent before it is closed.
    var connectionTimeoutSeconds = 30
    /// Seconds a request head (request line and headers) may take to
    /// arrive in full, from the connection's opening or its previous response.
    var headerTimeoutSeconds = 10
    /// Seconds a request's body may take to arrive in full.
    var requestTimeoutSeconds = 300
    /// Seconds a resumable upload is kept after its last append.
    var uploadExpirySeconds: Int64 = 86_400
    /// Hours idempotency records are kept; at least the contract's 24.
    var idempotencyRetentionHours = 48
    var faults = FaultInjector.Options()
    /// `--tls-cert` and `--tls-key`: serve HTTPS, reading them again on SIGHUP.
    var tls: TLSFiles?
}

/// Where the TLS certificate (chain) and its key are, both PEM.
struct TLSFiles: Sendable, Equatable {
    var certificate: String
    var key: String

    /// Both files' contents.
    /// - Throws: ``TLSFileError`` naming the file that cannot be read.
    func read() throws -> HTTPServer.TLSCredentials {
        func text(_ path: String, _ what: String) throws -> String {
            let bytes: [UInt8]?
            do { bytes = try FileSystem.read(path, limit: 1 << 20) } catch { throw TLSFileError(what: what, path: path, reason: "\(error)") }
            guard let bytes else { throw TLSFileError(what: what, path: path, reason: "larger than 1 MiB") }
            guard let text = String(validating: bytes, as: UTF8.self), text.contains("-----BEGIN ") else {
                throw TLSFileError(what: what, path: path, reason: "not a PEM file")
            }
            return text
        }
        return HTTPServer.TLSCredentials(certificatePEM: try text(certificate, "TLS certificate"), keyPEM: try text(key, "TLS key"))
    }
}

/// A TLS file that cannot be used. Names the file, never its contents.
struct TLSFileError: Error, CustomStringConvertible {
    let what: String
    let path: String
    let reason: String
    var description: String { "Failed to read the \(what) \(LogText.quoted(path)): \(reason)" }
}

extension ServeConfiguration {
    /// What the web interface is told.
    var web: WebSettings {
        var settings = WebSettings()
        settings.isTLS = tls != nil
        return settings
    }

    /// What the HTTP layer is told.
    var api: APISettings {
        var settings = APISettings()
        settings.receiptMaxBytes = receiptMaxBytes
        settings.jsonMaxBytes = jsonMaxBytes
        settings.requestTimeoutSeconds = requestTimeoutSeconds
        settings.uploadExpirySeconds = uploadExpirySeconds
        settings.faults = faults
        return settings
    }
}
