// The receipt decoder's calls into libvips and libseccomp: variadic C
// functions and GLib types stay here, behind plain C types.
#ifndef CDECODER_H
#define CDECODER_H

#include <stddef.h>
#include <stdint.h>

/// Starts libvips while files may still be opened: with `with_modules`,
/// its format modules too (HEIF through libheif, PDF, ImageMagick), else
/// its built-in loaders only (JPEG, PNG, WebP, TIFF, PNM); with
/// `with_imagemagick`, ImageMagick itself, which libvips reads BMP through
/// and which must start before the sandbox closes. 0 on success.
int cdecoder_start(int with_modules, int with_imagemagick);

/// Hard limits on the process: address space, CPU seconds, open files; no
/// core files and no file may grow. 0 on success, else -errno.
int cdecoder_limit(uint64_t memory_bytes, uint64_t cpu_seconds);

/// Killed with its parent (`PR_SET_PDEATHSIG`), `PR_SET_NO_NEW_PRIVS`,
/// then a seccomp allow-list: what decoding needs
/// (memory, threads, reading, writing to descriptors already open, opening
/// files read-only); every other call (sockets, exec, opening for writing,
/// creating, renaming, removing) fails with EPERM. 0 on success, else -errno.
int cdecoder_sandbox(void);

typedef struct {
    int width;
    int height;
    int pages;
    int orientation;
    int has_location;
    int has_alpha;
    char loader[64];
} cdecoder_header;

/// The header of the image in `buffer`, read without decoding its pixels.
/// 0 on success; -1 with `cdecoder_error()` set.
int cdecoder_read_header(const void *buffer, size_t length, cdecoder_header *header);

/// Page `page` of the image in `buffer`, shrunk (never enlarged) to fit
/// `max_edge`, turned upright by its EXIF orientation, flattened on white,
/// as a baseline JPEG of `quality` with no metadata. `*output` is freed
/// with `cdecoder_free`. 0 on success; -1 with `cdecoder_error()` set.
int cdecoder_jpeg(const void *buffer, size_t length, int page, int max_edge, int quality,
                  void **output, size_t *output_length, int *width, int *height, int *bands);

void cdecoder_free(void *pointer);

/// libvips's last error, one line.
const char *cdecoder_error(void);

// The reader's calls (Tesseract, poppler): this header is the module's umbrella.
#include "creader.h"

#endif
