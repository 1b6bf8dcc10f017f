/*
 * slow-getpwuid.c: an LD_PRELOAD shim for the account tests
 * (Tests/EndToEndTests/AccountLookupTests.swift, docs/testing.md).
 *
 * It makes getpwuid_r(3) of the uid in SLOW_GETPWUID_UID wait as a name
 * service that stopped answering would: it creates the file named in
 * SLOW_GETPWUID_ENTERED, then waits until the file named in
 * SLOW_GETPWUID_RELEASE exists (at most 60 seconds), and only then asks
 * the real getpwuid_r. Other uids are answered at once. The test builds it with
 *   cc -shared -fPIC -o slow-getpwuid.so slow-getpwuid.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int getpwuid_r(uid_t uid, struct passwd *pwd, char *buf, size_t buflen, struct passwd **result)
{
    static int (*real)(uid_t, struct passwd *, char *, size_t, struct passwd **);
    const char *slow = getenv("SLOW_GETPWUID_UID");
    const char *entered = getenv("SLOW_GETPWUID_ENTERED");
    const char *release = getenv("SLOW_GETPWUID_RELEASE");

    if (real == NULL)
        real = (int (*)(uid_t, struct passwd *, char *, size_t, struct passwd **))dlsym(RTLD_NEXT, "getpwuid_r");
    if (slow != NULL && entered != NULL && release != NULL && (uid_t)strtoul(slow, NULL, 10) == uid) {
        struct timespec tick = {0, 10 * 1000 * 1000};
        int fd = open(entered, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        int waited;

        if (fd >= 0)
            close(fd);
        for (waited = 0; waited < 6000 && access(release, F_OK) != 0; waited++)
            nanosleep(&tick, NULL);
    }
    return real(uid, pwd, buf, buflen, result);
}
