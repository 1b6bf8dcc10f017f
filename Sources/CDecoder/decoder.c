#define _GNU_SOURCE
#include "cdecoder.h"

#include <errno.h>
#include <fcntl.h>
#include <seccomp.h>
#include <signal.h>
#include <unistd.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <vips/vips.h>

static char last_error[512];

static void keep_error(const char *fallback) {
    const char *text = vips_error_buffer();
    if (!text || !*text) text = fallback;
    size_t n = 0;
    // One line: libvips's buffer holds several, newline-separated.
    while (text[n] && text[n] != '\n' && n < sizeof last_error - 1) { last_error[n] = text[n]; n++; }
    last_error[n] = 0;
    vips_error_clear();
}

const char *cdecoder_error(void) { return last_error; }

/// For reader.c: libvips's error, or `fallback`; and an error of our own.
void cdecoder_keep_error(const char *fallback) { keep_error(fallback); }
void cdecoder_set_error(const char *text) { snprintf(last_error, sizeof last_error, "%s", text); }

/// A 1 × 1 BMP: reading its header starts ImageMagick (libvips reads BMP
/// through it), which opens its configuration files on first use, so that
/// happens before the sandbox forbids nothing it needs but makes it fail.
/// Only for a BMP: the start costs about a third of a decoder's own.
static const unsigned char tiny_bmp[] = {
    'B', 'M', 58, 0, 0, 0, 0, 0, 0, 0, 54, 0, 0, 0, 40, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 24, 0,
    0, 0, 0, 0, 4, 0, 0, 0, 0x13, 0x0B, 0, 0, 0x13, 0x0B, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 255, 0,
};

/// libvips loads every module of its libdir's `vips-modules-8.14` at its
/// start (under `$VIPSHOME` when that is set), and linking them (libheif,
/// poppler, ImageMagick) makes a decoder's start about a third dearer: a
/// home that has none leaves them out.
static const char no_modules_home[] = "/nonexistent/expensed-decode";

int cdecoder_start(int with_modules, int with_imagemagick) {
    if (!(with_modules || with_imagemagick) && setenv("VIPSHOME", no_modules_home, 1)) {
        cdecoder_set_error("VIPSHOME could not be set");
        return -1;
    }
    if (VIPS_INIT("expensed-decode")) { keep_error("libvips did not start"); return -1; }
    // Not finding the modules' folder is no error of a receipt's.
    vips_error_clear();
    // Nothing is cached between receipts: one receipt per process.
    vips_cache_set_max(0);
    cdecoder_header header;
    if (with_imagemagick && cdecoder_read_header(tiny_bmp, sizeof tiny_bmp, &header)) return -1;
    return 0;
}

/// libvips reads most formats from memory; PNM only from a source.
static VipsImage *header_image(const void *buffer, size_t length) {
    if (vips_foreign_find_load_buffer(buffer, length)) {
        return vips_image_new_from_buffer(buffer, length, "", "access", VIPS_ACCESS_SEQUENTIAL, NULL);
    }
    vips_error_clear();
    VipsSource *source = vips_source_new_from_memory(buffer, length);
    VipsImage *image = vips_image_new_from_source(source, "", "access", VIPS_ACCESS_SEQUENTIAL, NULL);
    g_object_unref(source);
    return image;
}

int cdecoder_limit(uint64_t memory_bytes, uint64_t cpu_seconds) {
    struct rlimit memory = { memory_bytes, memory_bytes };
    struct rlimit cpu = { cpu_seconds, cpu_seconds + 1 };
    struct rlimit none = { 0, 0 };
    struct rlimit files = { 64, 64 };
    if (setrlimit(RLIMIT_AS, &memory) || setrlimit(RLIMIT_CPU, &cpu) || setrlimit(RLIMIT_CORE, &none)
        || setrlimit(RLIMIT_FSIZE, &none) || setrlimit(RLIMIT_NOFILE, &files)) return -errno;
    return 0;
}

int cdecoder_sandbox(void) {
    // Dies with the daemon: a decoder never outlives the one who waits for it.
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0)) return -errno;
    if (getppid() == 1) return -ESRCH;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) return -errno;
    scmp_filter_ctx filter = seccomp_init(SCMP_ACT_ERRNO(EPERM));
    if (!filter) return -ENOMEM;
    static const int allowed[] = {
        SCMP_SYS(read), SCMP_SYS(readv), SCMP_SYS(pread64), SCMP_SYS(write), SCMP_SYS(writev),
        SCMP_SYS(lseek), SCMP_SYS(close), SCMP_SYS(fstat), SCMP_SYS(newfstatat), SCMP_SYS(statx),
        SCMP_SYS(stat), SCMP_SYS(lstat), SCMP_SYS(access), SCMP_SYS(faccessat), SCMP_SYS(readlink),
        SCMP_SYS(getdents64), SCMP_SYS(fcntl), SCMP_SYS(dup), SCMP_SYS(getcwd),
        SCMP_SYS(mmap), SCMP_SYS(munmap), SCMP_SYS(mremap), SCMP_SYS(mprotect), SCMP_SYS(brk),
        SCMP_SYS(madvise), SCMP_SYS(membarrier),
        SCMP_SYS(futex), SCMP_SYS(clone), SCMP_SYS(clone3), SCMP_SYS(set_robust_list), SCMP_SYS(rseq),
        SCMP_SYS(set_tid_address), SCMP_SYS(exit), SCMP_SYS(exit_group), SCMP_SYS(sched_yield),
        SCMP_SYS(sched_getaffinity), SCMP_SYS(sched_setaffinity), SCMP_SYS(getpriority), SCMP_SYS(setpriority),
        SCMP_SYS(rt_sigaction), SCMP_SYS(rt_sigprocmask), SCMP_SYS(rt_sigreturn), SCMP_SYS(sigaltstack),
        SCMP_SYS(tgkill), SCMP_SYS(getpid), SCMP_SYS(gettid), SCMP_SYS(getuid), SCMP_SYS(geteuid),
        SCMP_SYS(getgid), SCMP_SYS(getegid), SCMP_SYS(uname), SCMP_SYS(sysinfo), SCMP_SYS(getrlimit),
        SCMP_SYS(prlimit64), SCMP_SYS(getrusage), SCMP_SYS(prctl),
        SCMP_SYS(clock_gettime), SCMP_SYS(clock_getres), SCMP_SYS(gettimeofday), SCMP_SYS(nanosleep),
        SCMP_SYS(clock_nanosleep), SCMP_SYS(getrandom), SCMP_SYS(poll), SCMP_SYS(ppoll),
        SCMP_SYS(eventfd2), SCMP_SYS(pipe2),
    };
    int rc = 0;
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0] && rc == 0; i++) {
        rc = seccomp_rule_add(filter, SCMP_ACT_ALLOW, allowed[i], 0);
    }
    // Opening only to read: a call with a writing or creating flag stays EPERM.
    const uint64_t writing = O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND | O_TMPFILE;
    if (rc == 0) rc = seccomp_rule_add(filter, SCMP_ACT_ALLOW, SCMP_SYS(openat), 1, SCMP_A2(SCMP_CMP_MASKED_EQ, writing, 0));
    if (rc == 0) rc = seccomp_rule_add(filter, SCMP_ACT_ALLOW, SCMP_SYS(open), 1, SCMP_A1(SCMP_CMP_MASKED_EQ, writing, 0));
    if (rc == 0) rc = seccomp_load(filter);
    seccomp_release(filter);
    return rc;
}

static int has_location_field(VipsImage *image) {
    gchar **fields = vips_image_get_fields(image);
    int found = 0;
    for (int i = 0; fields && fields[i]; i++) {
        // libvips names the GPS IFD's tags exif-ifd3-*.
        if (strncmp(fields[i], "exif-ifd3-", 10) == 0) found = 1;
    }
    g_strfreev(fields);
    return found;
}

int cdecoder_read_header(const void *buffer, size_t length, cdecoder_header *header) {
    VipsImage *image = header_image(buffer, length);
    if (!image) { keep_error("the header cannot be read"); return -1; }
    const char *loader = "";
    if (vips_image_get_typeof(image, "vips-loader")) vips_image_get_string(image, "vips-loader", &loader);
    header->width = vips_image_get_width(image);
    header->height = vips_image_get_page_height(image);
    header->pages = vips_image_get_n_pages(image);
    header->orientation = vips_image_get_orientation(image);
    header->has_location = has_location_field(image);
    header->has_alpha = vips_image_hasalpha(image);
    snprintf(header->loader, sizeof header->loader, "%s", loader);
    g_object_unref(image);
    return 0;
}

/// The receipt decoded to fit `edge` (both sides) as `size` says, with the
/// loader's `options`: from its buffer, or through a source for the loaders
/// that take only one (libheif's). Shared by the copy and the reader.
int cdecoder_thumbnail(const void *buffer, size_t length, const char *options, int edge, VipsSize size, VipsImage **out) {
    if (vips_foreign_find_load_buffer(buffer, length)) {
        return vips_thumbnail_buffer((void *)buffer, length, out, edge, "height", edge, "size", size, "option_string", options, NULL);
    }
    vips_error_clear();
    VipsSource *source = vips_source_new_from_memory(buffer, length);
    int failed = vips_thumbnail_source(source, out, edge, "height", edge, "size", size, "option_string", options, NULL);
    g_object_unref(source);
    return failed;
}

int cdecoder_jpeg(const void *buffer, size_t length, int page, int max_edge, int quality,
                  void **output, size_t *output_length, int *width, int *height, int *bands) {
    // Only a loader of pages knows `page`.
    char options[32] = "";
    if (page > 0) snprintf(options, sizeof options, "page=%d", page);
    VipsImage *thumbnail = NULL, *flat = NULL;
    int failed = cdecoder_thumbnail(buffer, length, options, max_edge, VIPS_SIZE_DOWN, &thumbnail);
    if (failed) {
        keep_error("the image cannot be decoded");
        return -1;
    }
    VipsImage *saved = thumbnail;
    if (vips_image_hasalpha(thumbnail)) {
        VipsArrayDouble *white = vips_array_double_newv(1, 255.0);
        int failed = vips_flatten(thumbnail, &flat, "background", white, NULL);
        vips_area_unref(VIPS_AREA(white));
        if (failed) { keep_error("the image cannot be flattened"); g_object_unref(thumbnail); return -1; }
        saved = flat;
    }
    int rc = vips_jpegsave_buffer(saved, output, output_length, "Q", quality, "strip", TRUE, "optimize_coding", TRUE, NULL);
    if (rc) keep_error("the copy cannot be encoded");
    *width = vips_image_get_width(saved);
    *height = vips_image_get_height(saved);
    *bands = vips_image_get_bands(saved);
    if (flat) g_object_unref(flat);
    g_object_unref(thumbnail);
    return rc ? -1 : 0;
}

void cdecoder_free(void *pointer) { g_free(pointer); }
