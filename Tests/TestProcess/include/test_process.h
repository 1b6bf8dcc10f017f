// The test process's own set-up, made before any test runs (see
// test_process.c). Nothing to call: linking this target is enough.
int test_process_sigpipe_ignored(void);
