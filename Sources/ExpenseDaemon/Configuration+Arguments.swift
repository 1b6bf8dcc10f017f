import ExpenseCore
import Posix

/// What `expensed`'s arguments asked for.
public enum DaemonInvocation: Equatable, Sendable {
    case run(Configuration)
    case help
    case version
}

extension Configuration {
    /// The version `--version` prints.
    public static let version = ReleaseVersion.current

    /// Parses `expensed`'s arguments (without the program name): flags
    /// first, then the configuration file they name (or the default one),
    /// then the flags again so they win.
    /// - Parameter readFile: reads a file's text; `nil` when it does not exist.
    public static func parse(arguments: [String], readFile: (String) throws -> String?) throws -> DaemonInvocation {
        var flags: [(Key, String)] = []
        var configFile: String?
        var configExplicit = false
        var scanner = ArgumentScanner(arguments, lastWins: true)
        let table = options
        while let item = try scanner.next(table.option) {
            switch item {
            case .positional(let argument):
                throw UsageError("unexpected argument \(LogText.quoted(argument.shown, limit: 64))")
            case .option(let option, nil):
                switch option.name {
                case "--version": return .version
                case "--foreground": continue // Always in the foreground (systemd's Type=notify); accepted for scripts that say so.
                default: return .help
                }
            case .option(let option, let value?):
                if option.name == "--config" {
                    guard !value.shown.isEmpty else { throw UsageError("option '--config' needs a file, not an empty value") }
                    configFile = value.shown
                    configExplicit = true
                } else if let key = keys.first(where: { $0.flag == option.name }) {
                    flags.append((key, value.shown))
                }
            }
        }

        var configuration = Configuration()
        if let configFile { configuration.configFile = configFile }
        let text: String?
        do {
            text = try readFile(configuration.configFile)
        } catch {
            throw ConfigurationError("cannot read: \(error)", file: configuration.configFile)
        }
        if let text {
            try configuration.apply(fileText: text, path: configuration.configFile)
        } else if configExplicit {
            throw ConfigurationError("no such file", file: configuration.configFile)
        }
        for (key, value) in flags {
            do {
                try key.apply(&configuration, value)
            } catch {
                throw UsageError("\(key.flag): \(error.message)")
            }
        }
        if configuration.backoffBaseMilliseconds > configuration.backoffCapMilliseconds {
            throw ConfigurationError("backoff_base (\(DurationText.describe(milliseconds: configuration.backoffBaseMilliseconds))) is longer than backoff_cap (\(DurationText.describe(milliseconds: configuration.backoffCapMilliseconds))): the first retry could not wait less than the longest")
        }
        if let outboxBytes = configuration.outboxMaxReceiptBytes, outboxBytes < Int64(configuration.largestReceipt) {
            throw ConfigurationError("outbox_max_receipt_bytes (\(SizeText.describe(bytes: outboxBytes))) is less than the largest receipt taken (receipt_max_bytes and spool_max_bytes: \(SizeText.describe(bytes: Int64(configuration.largestReceipt)))): such a receipt could never be queued")
        }
        try configuration.checkBackend()
        return .run(configuration)
    }

    /// `expensed`'s options as `--help` lists them: `--config`, then a flag
    /// for every configuration key (``keys``), then help and version.
    static var options: OptionTable {
        OptionTable([CommandOption("--config", valueName: "FILE", help: "configuration file (default /etc/expensed/expensed.conf)")]
                    + keys.map { CommandOption($0.flag, valueName: $0.valueName, help: $0.help) }
                    + [CommandOption("--foreground", valueName: nil, help: "run in the foreground, as always (systemd's Type=notify)"),
                       CommandOption("-h, --help", valueName: nil, help: "show this help"), CommandOption("--version", valueName: nil, help: "show the version")])
    }

    /// `expensed --help`.
    public static var helpText: String {
        """
        OVERVIEW: Keep expenses and receipts durably queued and sync them to an expense server.

        USAGE: expensed [--config FILE] [options]

        Runs in the foreground (systemd Type=notify). Options override the
        configuration file (see expensed.conf(5)).

        OPTIONS:

        """ + options.rendered(HelpLayout(column: nil, minimumGap: 2))
    }
}
