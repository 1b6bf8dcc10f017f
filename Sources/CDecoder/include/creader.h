// The receipt reader's calls into Tesseract (its C API) and poppler-glib:
// GLib types and Tesseract's handle stay here, behind plain C types.
#ifndef CREADER_H
#define CREADER_H

#include <stddef.h>

/// Loads Tesseract's `languages` ("eng+deu") from `tessdata` and starts
/// poppler, reading a small PDF's text and rendering it, while files may
/// still be opened: afterwards reading needs nothing from the file system.
/// Tesseract and poppler-glib are loaded first (`dlopen` of the two
/// sonames): -2 with `cdecoder_error()` set when they cannot be.
/// 0 on success; -1 with `cdecoder_error()` set. The calls below are
/// made only after it succeeded: they go through what it loaded.
int creader_start(const char *tessdata, const char *languages, const char *tesseract_library, const char *poppler_library);

/// One word Tesseract read: its UTF-8 text, its confidence (0 to 100), and
/// whether it begins a line of text.
typedef void (*creader_word_fn)(void *context, const char *text, float confidence, int starts_line);

/// Recognizes page `page` of the image or PDF in `buffer`: decoded by
/// libvips (a PDF rendered so its long edge is `long_edge`; an image
/// turned upright by its EXIF orientation and shrunk, never enlarged, to
/// `long_edge`), flattened on white, grey, then read by Tesseract, each
/// word handed to `word` in reading order.
/// 0 on success; -1 with `cdecoder_error()` set.
int creader_recognize(const void *buffer, size_t length, int page, int is_pdf, int long_edge,
                      creader_word_fn word, void *context);

/// Opens the PDF in `buffer` (copied) for its text layer: its page count.
/// 0 on success; -1 with `cdecoder_error()` set.
int creader_pdf_open(const void *buffer, size_t length, int *pages);

/// One character of a PDF page's text layer: its UTF-8 text and its box
/// on the page, in points from the top left.
typedef void (*creader_glyph_fn)(void *context, const char *text, double x1, double y1, double x2, double y2);

/// The text layer of page `page` of the PDF opened last, a character at a
/// time. 0 on success; 1 when the page has more than `max_bytes` of text
/// (nothing is handed over); -1 with `cdecoder_error()` set.
int creader_pdf_text(int page, size_t max_bytes, creader_glyph_fn glyph, void *context);

/// Lets Tesseract go (its language data), so it exits quietly.
void creader_end(void);

#endif
