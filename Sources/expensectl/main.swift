// expensectl: the client of expensed. Everything lives in ExpenseCtl.
import ExpenseCtl
#if canImport(Glibc)
import Glibc
#endif

exit(ExpenseCtl.main(arguments: Array(CommandLine.arguments.dropFirst())))
