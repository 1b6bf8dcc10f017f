// The test process hosts servers, proxies and clients whose peers go away
// on purpose (kill -9, dropped connections, a reader that stops). A write
// to such a peer must be an error the test sees (EPIPE), as it is in the
// daemon and the server (they ignore SIGPIPE too), not a signal that ends
// every test running beside it. Done once, as the test bundle is loaded,
// before any test starts.
#include <signal.h>
#include "test_process.h"

static int ignored;

__attribute__((constructor)) static void test_process_ignore_sigpipe(void) {
    ignored = signal(SIGPIPE, SIG_IGN) != SIG_ERR;
}

int test_process_sigpipe_ignored(void) { return ignored; }
