import Posix

/// Tesseract's languages as `receipt_languages` names them (`eng`, `deu`,
/// `chi_sim`): each one's language data file, and the Debian package
/// that installs it.
public enum ReadingLanguages {
    /// Why the first of `names` cannot be a language, or nil when all can:
    /// lower-case letters, digits and `_`, starting with a letter, at most
    /// 32 characters; at least one language, each once.
    public static func firstInvalid(_ names: [String]) -> String? {
        guard !names.isEmpty else { return "at least one language is needed, like eng" }
        for name in names {
            let bytes = Array(name.utf8)
            guard (1...32).contains(bytes.count), let first = bytes.first, first >= 0x61 && first <= 0x7A,
                  bytes.allSatisfy({ ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x5F }) else {
                return "'\(name.prefix(40))' is not a Tesseract language name (like eng, deu or chi_sim)"
            }
        }
        if Set(names).count < names.count { return "a language is named twice" }
        return nil
    }

    /// The Debian package of `language`'s data: `tesseract-ocr-deu`, `tesseract-ocr-chi-sim`.
    public static func debianPackage(_ language: String) -> String {
        "tesseract-ocr-" + language.replacingUnderscores()
    }

    /// Why reading cannot start with `languages` from `tessdata`, naming
    /// the Debian package of the first language whose data is missing; nil
    /// when every `NAME.traineddata` is there.
    public static func missing(_ languages: [String], in tessdata: String) -> String? {
        for language in languages where !FileSystem.exists("\(tessdata)/\(language).traineddata") {
            return "no \(language).traineddata in \(tessdata): install Debian's \(debianPackage(language)) (receipt_languages)"
        }
        return nil
    }
}

extension String {
    fileprivate func replacingUnderscores() -> String { String(map { $0 == "_" ? "-" : $0 }) }
}
