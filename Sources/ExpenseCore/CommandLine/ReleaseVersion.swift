/// The version `expensed --version` and `expensectl --version` print: the
/// one place it is written in the code. The Debian packages carry it too,
/// from `debian/changelog`, and `scripts/package` refuses to package
/// binaries that print another (`PackagingTests` checks they agree).
public enum ReleaseVersion {
    public static let current = "0.1.0"
}
