// expensectl: the client of expensed. Everything lives in ExpenseCtl.
import ExpenseCtl
import Posix

// The raw bytes: CommandLine.arguments would turn invalid UTF-8 into U+FFFD.
CurrentProcess.exit(ExpenseCtl.main(arguments: CurrentProcess.rawArguments))
