/// Why the store could not do what was asked. `code` is what callers
/// switch on; `message` is for people and never holds personal data.
public struct StoreError: Error, Sendable, CustomStringConvertible {
    public struct Code: Sendable, Hashable {
        private enum Kind: Hashable { case notADatabase, newerSchema, io, notFound, ambiguous, invalidState }
        private let kind: Kind
        public static let notADatabase = Code(kind: .notADatabase)
        public static let newerSchema = Code(kind: .newerSchema)
        public static let io = Code(kind: .io)
        public static let notFound = Code(kind: .notFound)
        public static let ambiguous = Code(kind: .ambiguous)
        public static let invalidState = Code(kind: .invalidState)
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
