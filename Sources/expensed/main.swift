// expensed: the sync daemon. Everything lives in ExpenseDaemon; this only runs it.
import ExpenseDaemon
#if canImport(Glibc)
import Glibc
#endif

exit(await Daemon.main(arguments: Array(CommandLine.arguments.dropFirst())))
