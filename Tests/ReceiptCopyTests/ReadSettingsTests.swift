import ExpenseCore
import ReceiptCopy
import Testing

/// The reader's command line and its languages, as values.
@Suite struct ReadSettingsTests {
    @Test func settings_roundTripThroughTheCommandLine_andBadOnesAreRefused() throws {
        var settings = ReadSettings()
        settings.languages = ["eng", "deu", "chi_sim"]
        settings.tessdata = "/opt/tess data"
        settings.pagesRead = 2
        settings.longEdge = 3000
        #expect(try ReadSettings(arguments: settings.arguments) == settings)
        #expect(settings.arguments.prefix(5) == ["--read", "--languages", "eng+deu+chi_sim", "--tessdata", "/opt/tess data"])
        for bad in [[], ["--languages", "eng"], ["--read", "--languages"], ["--read", "--languages", ""], ["--read", "--languages", "eng+ENG"],
                    ["--read", "--languages", "eng+eng"], ["--read", "--languages", "../x"], ["--read", "--tessdata", "relative"],
                    ["--read", "--long-edge", "99"], ["--read", "--long-edge", "x"], ["--read", "--pages-read", "0"], ["--read", "--max-pages", "0"],
                    ["--read", "--nope", "1"], ["--read", "--memory", "-1"], ["--read", "--quality", "80"]] {
            #expect(throws: CopyFailure.self, "\(bad)") { try ReadSettings(arguments: bad) }
        }
    }

    @Test(arguments: [("eng", "tesseract-ocr-eng"), ("deu", "tesseract-ocr-deu"), ("chi_sim", "tesseract-ocr-chi-sim"),
                      ("deu_latf", "tesseract-ocr-deu-latf")])
    func aLanguage_namesItsDebianPackage(_ language: String, _ package: String) {
        #expect(ReadingLanguages.debianPackage(language) == package)
    }

    @Test func languageNames_areTesseractsOwn() {
        #expect(ReadingLanguages.firstInvalid(["eng", "deu", "chi_sim", "srp_latn"]) == nil)
        #expect(ReadingLanguages.firstInvalid([]) == "at least one language is needed, like eng")
        #expect(ReadingLanguages.firstInvalid(["eng", "eng"]) == "a language is named twice")
        for bad in ["", "Eng", "e ng", "../eng", "eng.traineddata", "1eng", "_eng", String(repeating: "a", count: 33), "énglish"] {
            #expect(ReadingLanguages.firstInvalid([bad]) != nil, "\(bad)")
        }
    }

    @Test func theInstalledLanguage_isFound_andAMissingOneIsNamed() {
        #expect(ReadingLanguages.missing(["eng"], in: ReadSettings.debianTessdata) == nil, "scripts/setup installs tesseract-ocr-eng")
        #expect(ReadingLanguages.missing(["eng", "xyz"], in: ReadSettings.debianTessdata)
                == "no xyz.traineddata in /usr/share/tesseract-ocr/5/tessdata: install Debian's tesseract-ocr-xyz (receipt_languages)")
        #expect(ReadingLanguages.missing(["eng"], in: "/nonexistent") == "no eng.traineddata in /nonexistent: install Debian's tesseract-ocr-eng (receipt_languages)")
    }
}
