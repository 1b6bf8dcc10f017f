/*
 * skip-fsync.c: an LD_PRELOAD shim for the durability-order tests
 * (Tests/EndToEndTests/DurabilityOrderTests.swift, docs/testing.md).
 *
 * It turns fsync(2) and fdatasync(2) of a descriptor whose path matches the
 * glob in SKIP_FSYNC_PATTERN into a no-op that reports success, as a code
 * change that dropped that flush would: the process runs on unchanged, and
 * only the order of its system calls shows what is missing. Each call
 * skipped is said on standard error. The test builds it with
 *   cc -shared -fPIC -o skip-fsync.so skip-fsync.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* True (and said) when the file open as fd matches the pattern. */
static int skip(int fd, const char *call)
{
    const char *pattern = getenv("SKIP_FSYNC_PATTERN");
    char link[64], path[4096];
    ssize_t n;

    if (pattern == NULL || *pattern == '\0')
        return 0;
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    n = readlink(link, path, sizeof path - 1);
    if (n < 0)
        return 0;
    path[n] = '\0';
    if (fnmatch(pattern, path, 0) != 0)
        return 0;
    dprintf(2, "skip-fsync: skipped %s of %s\n", call, path);
    return 1;
}

int fsync(int fd)
{
    int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    return skip(fd, "fsync") ? 0 : real(fd);
}

int fdatasync(int fd)
{
    int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    return skip(fd, "fdatasync") ? 0 : real(fd);
}
