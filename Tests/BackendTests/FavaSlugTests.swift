@testable import FavaBackend
import Testing

/// Where fava says it serves its ledger (`GET <root>/`'s redirect), read
/// against the configured `server` (FavaTests has the real fava).
struct FavaSlugTests {
    @Test func theServerSplitsIntoRootAndSlug() {
        #expect(FavaBackend.rootAndSlug(of: "http://127.0.0.1:5000/household")! == ("http://127.0.0.1:5000", "household"))
        #expect(FavaBackend.rootAndSlug(of: "https://h/books/household")! == ("https://h/books", "household"))
        for garbage in ["http://h", "http://h/", "household", "", "http://h//x"] {
            #expect(FavaBackend.rootAndSlug(of: garbage) == nil, "\(garbage)")
        }
    }

    @Test func theSlugIsReadFromARelativeOrAbsoluteRedirect_belowTheRoot() {
        #expect(FavaBackend.slug(inLocation: "/beancount/income_statement/", root: "http://127.0.0.1:5000") == "beancount")
        #expect(FavaBackend.slug(inLocation: "http://127.0.0.1:5000/household/income_statement/?time=2026", root: "http://127.0.0.1:5000") == "household")
        #expect(FavaBackend.slug(inLocation: "/books/beancount/", root: "https://h/books") == "beancount")
        #expect(FavaBackend.slug(inLocation: "/household?x", root: "http://h") == "household")
        for garbage in ["/", "", "/other/beancount/", "http://h/", "//", "?x"] {
            #expect(FavaBackend.slug(inLocation: garbage, root: "http://h/books") == nil, "\(garbage)")
        }
    }
}
