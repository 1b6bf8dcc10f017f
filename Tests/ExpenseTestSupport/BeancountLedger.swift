import Foundation

/// A beancount ledger as beancount's own loader reads it (run from the
/// test venv, answering JSON): the verdict of what a fava backend really
/// stored, independent of fava and of the daemon.
public struct BeancountLedger: Sendable, Decodable {
    public struct Posting: Sendable, Decodable, Equatable {
        public let account: String
        /// The number as beancount prints it (`"12.50"`), `nil` when elided.
        public let number: String?
        public let currency: String?
        public let meta: [String: String]
    }

    public struct Transaction: Sendable, Decodable {
        public let date: String
        public let flag: String
        public let payee: String?
        public let narration: String
        public let tags: [String]
        public let links: [String]
        /// Metadata values as strings (without beancount's own `filename`/`lineno`).
        public let meta: [String: String]
        public let postings: [Posting]
        /// The line of the ledger file where the entry starts.
        public let lineno: Int?
    }

    /// A `document` entry: a file beancount found under a documents folder
    /// (named `YYYY-MM-DD.…`, in the folder of an open account).
    public struct Document: Sendable, Decodable {
        public let date: String
        public let account: String
        public let filename: String
        /// SHA-256 (hex) of the file's bytes, read when the ledger was loaded.
        public let sha256: String?
    }

    public struct LoadError: Sendable, Decodable, CustomStringConvertible {
        public let message: String
        public let lineno: Int?
        public var description: String { "line \(lineno.map(String.init) ?? "?"): \(message)" }
    }

    public let title: String
    /// The `documents` option values, as the ledger spells them.
    public let documents: [String]
    public let transactions: [Transaction]
    public let documentEntries: [Document]
    public let errors: [LoadError]

    enum CodingKeys: String, CodingKey {
        case title, documents, transactions, errors
        case documentEntries = "document_entries"
    }

    /// Loads `path` with `beancount.loader.load_file`.
    /// - Throws: when the loader cannot run or its output is not the JSON
    ///   expected (load errors of the ledger itself are in ``errors``).
    public static func load(_ path: String) throws -> BeancountLedger {
        let result = try PythonVenv.run(script, arguments: [path])
        guard result.status == 0 else { throw TestFailure("beancount loader failed (\(result.status)): \(result.stderr)") }
        do {
            return try JSONDecoder().decode(BeancountLedger.self, from: Data(result.stdout.utf8))
        } catch {
            throw TestFailure("beancount loader printed what is not a ledger (\(error)): \(result.stdout.prefix(500))")
        }
    }

    /// The transactions carrying `link` (`^link` in the ledger).
    public func transactions(linked link: String) -> [Transaction] {
        transactions.filter { $0.links.contains(link) }
    }

    /// The loader, as a script for `python -c` (no file to ship beside the sources).
    static let script = #"""
import hashlib, json, sys
from beancount import loader
from beancount.core import data

# Without beancount's pickle cache: a load of 1 s or more (a thousand
# entries on a loaded machine) writes one, stamped with the ledger's mtime
# and size as they are when the load ends; a write by fava during the load
# would leave a cache of the older text that every later load returns.
loader.initialize(use_cache=False)
entries, errors, options = loader.load_file(sys.argv[1])

def meta(m):
    return {k: str(v) for k, v in (m or {}).items() if k not in ("filename", "lineno") and not k.startswith("__")}

def digest(path):
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None

out = {"title": options["title"], "documents": list(options["documents"]),
       "transactions": [], "document_entries": [], "errors": []}
for e in entries:
    if isinstance(e, data.Transaction):
        out["transactions"].append({
            "date": e.date.isoformat(), "flag": e.flag, "payee": e.payee, "narration": e.narration,
            "tags": sorted(e.tags), "links": sorted(e.links), "meta": meta(e.meta), "lineno": e.meta.get("lineno"),
            "postings": [{"account": p.account,
                          "number": None if p.units is None or p.units.number is None else str(p.units.number),
                          "currency": None if p.units is None else p.units.currency,
                          "meta": meta(p.meta)} for p in e.postings]})
    elif isinstance(e, data.Document):
        out["document_entries"].append({"date": e.date.isoformat(), "account": e.account,
                                        "filename": e.filename, "sha256": digest(e.filename)})
for err in errors:
    source = err.source or {}
    out["errors"].append({"message": str(err.message), "lineno": source.get("lineno")})
json.dump(out, sys.stdout)
"""#
}
