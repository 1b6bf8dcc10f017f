/// Beancount account names, as its grammar takes them: a root
/// (`Assets Liabilities Equity Income Expenses`) and components that start
/// with a capital letter or a digit, followed by letters, digits or `-`,
/// joined by `:` (beancount's lexer, ASCII only here).
public enum BeancountAccount {
    static let roots: Set<String> = ["Assets", "Liabilities", "Equity", "Income", "Expenses"]

    /// Whether `name` is an account beancount accepts.
    public static func isValid(_ name: String) -> Bool {
        let components = name.split(separator: ":", omittingEmptySubsequences: false)
        guard components.count >= 2, let root = components.first, roots.contains(String(root)) else { return false }
        return components.dropFirst().allSatisfy { component in
            guard let first = component.unicodeScalars.first, isUpper(first) || isDigit(first) else { return false }
            return component.unicodeScalars.allSatisfy { isUpper($0) || isLower($0) || isDigit($0) || $0 == "-" }
        }
    }

    /// `template` with `{category}` replaced by `category` made into one
    /// account component ("team lunch" → "Team-lunch"); `fallback` when the
    /// expense has no category or nothing of it can be used.
    public static func expand(_ template: String, category: String?, fallback: String = "Misc") -> String {
        let component = category.flatMap(self.component(of:)) ?? fallback
        var out = ""
        var rest = Substring(template)
        while let range = rest.firstRange(of: "{category}") {
            out += rest[..<range.lowerBound] + component
            rest = rest[range.upperBound...]
        }
        return out + rest
    }

    /// A category as one component: letters and digits kept, runs of
    /// anything else one `-`, the first letter capitalised; nil when it
    /// holds no ASCII letter or digit.
    static func component(of category: String) -> String? {
        var out = ""
        var pendingDash = false
        for scalar in category.unicodeScalars {
            if isUpper(scalar) || isLower(scalar) || isDigit(scalar) {
                if pendingDash && !out.isEmpty { out += "-" }
                pendingDash = false
                out.unicodeScalars.append(out.isEmpty && isLower(scalar) ? Unicode.Scalar(scalar.value - 32)! : scalar)
            } else {
                pendingDash = true
            }
        }
        return out.isEmpty ? nil : out
    }

    private static func isUpper(_ s: Unicode.Scalar) -> Bool { ("A"..."Z").contains(s) }
    private static func isLower(_ s: Unicode.Scalar) -> Bool { ("a"..."z").contains(s) }
    private static func isDigit(_ s: Unicode.Scalar) -> Bool { ("0"..."9").contains(s) }
}
