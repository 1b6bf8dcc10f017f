// expense-server: the reference backend (docs/server.md).
//
//   expense-server serve --listen 127.0.0.1:8080 --data-dir DIR
//   expense-server user add NAME --data-dir DIR
//
// Everything lives in the ExpenseServer library, where it is tested; this
// file only hands over the arguments and exits with the status it gets.
import ExpenseServer
import Posix

CurrentProcess.exit(ServerCommand.main(Array(CommandLine.arguments.dropFirst())))
