#include "creader.h"
#include "cdecoder.h"

#include <dlfcn.h>
#include <poppler.h>
#include <stdio.h>
#include <string.h>
#include <tesseract/capi.h>
#include <vips/vips.h>

/// From decoder.c: the last error (one line), and the decoding both share.
void cdecoder_keep_error(const char *fallback);
void cdecoder_set_error(const char *text);
int cdecoder_thumbnail(const void *buffer, size_t length, const char *options, int edge, VipsSize size, VipsImage **out);

static TessBaseAPI *tesseract;
static PopplerDocument *document;

/// Tesseract and poppler-glib are loaded by `creader_start`, in the reading
/// mode only: linked into the decoder, their libraries and theirs (about
/// twenty) would be mapped and relocated at the start of every copy too,
/// a fifth of a small receipt's copy (bench/README.md, bench-copy); a copy
/// that starts libvips's modules still has poppler-glib through libvips's
/// PDF module, never Tesseract. The headers still give every call its type.
#define TESSERACT_CALLS(X) X(TessBaseAPICreate) X(TessBaseAPIInit3) X(TessBaseAPISetPageSegMode) X(TessBaseAPIEnd) \
    X(TessBaseAPIDelete) X(TessBaseAPISetImage) X(TessBaseAPISetSourceResolution) X(TessBaseAPIRecognize) \
    X(TessBaseAPIClear) X(TessBaseAPIGetIterator) X(TessResultIteratorGetPageIterator) X(TessResultIteratorGetUTF8Text) \
    X(TessResultIteratorConfidence) X(TessPageIteratorIsAtBeginningOf) X(TessDeleteText) X(TessResultIteratorNext) \
    X(TessResultIteratorDelete)
#define POPPLER_CALLS(X) X(poppler_document_new_from_bytes) X(poppler_document_get_n_pages) X(poppler_document_get_page) \
    X(poppler_page_get_text) X(poppler_page_get_text_layout)
#define CALL_FIELD(name) __typeof__(&name) name;
static struct {
    TESSERACT_CALLS(CALL_FIELD)
    POPPLER_CALLS(CALL_FIELD)
} lib;

/// Opens `soname`, for good: `lib` points into it until the process ends,
/// and Tesseract is let go at exit (`creader_end`). -1 with the error set.
static int open_library(const char *soname, void **handle) {
    *handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (!*handle) {
        const char *why = dlerror();  // names the library already
        cdecoder_set_error(why ? why : "a library of the reader cannot be loaded");
        return -1;
    }
    return 0;
}

/// Opens both libraries and finds every call of `lib` in them.
/// -1 with the error set.
static int load_calls(const char *tesseract_library, const char *poppler_library) {
    void *tesseract_handle = NULL, *poppler_handle = NULL;
    if (open_library(tesseract_library, &tesseract_handle) || open_library(poppler_library, &poppler_handle)) return -1;
    const char *missing = NULL, *in = NULL;
#define LOAD_CALL(handle, soname, name) \
    if (!missing && !(lib.name = (__typeof__(lib.name))dlsym(handle, #name))) { missing = #name; in = soname; }
#define LOAD_TESSERACT(name) LOAD_CALL(tesseract_handle, tesseract_library, name)
#define LOAD_POPPLER(name) LOAD_CALL(poppler_handle, poppler_library, name)
    TESSERACT_CALLS(LOAD_TESSERACT)
    POPPLER_CALLS(LOAD_POPPLER)
    if (missing) {
        char message[256];
        snprintf(message, sizeof message, "%s has no %s", in, missing);
        cdecoder_set_error(message);
        return -1;
    }
    return 0;
}

/// A one-page PDF with a line of Helvetica text, written out in full
/// (objects, then a cross-reference table of their offsets, so poppler
/// has nothing to repair or complain of): reading its text and rendering
/// it starts poppler, cairo and fontconfig before the sandbox.
static size_t warm_pdf(char *out, size_t size) {
    static const char *objects[] = {
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 72 36] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
        "<< /Length 36 >>\nstream\nBT /F1 10 Tf 4 12 Td (Total 1.00) Tj ET\nendstream",
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    };
    enum { count = sizeof objects / sizeof objects[0] };
    size_t offsets[count], n = (size_t)snprintf(out, size, "%%PDF-1.4\n");
    for (int i = 0; i < count; i++) {
        offsets[i] = n;
        n += (size_t)snprintf(out + n, size - n, "%d 0 obj\n%s\nendobj\n", i + 1, objects[i]);
    }
    size_t xref = n;
    n += (size_t)snprintf(out + n, size - n, "xref\n0 %d\n0000000000 65535 f \n", count + 1);
    for (int i = 0; i < count; i++) n += (size_t)snprintf(out + n, size - n, "%010zu 00000 n \n", offsets[i]);
    n += (size_t)snprintf(out + n, size - n, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%zu\n%%%%EOF\n", count + 1, xref);
    return n;
}

static void ignore_glyph(void *context, const char *text, double x1, double y1, double x2, double y2) {
    (void)context; (void)text; (void)x1; (void)y1; (void)x2; (void)y2;
}

int creader_start(const char *tessdata, const char *languages, const char *tesseract_library, const char *poppler_library) {
    if (load_calls(tesseract_library, poppler_library)) return -2;
    tesseract = lib.TessBaseAPICreate();
    if (!tesseract || lib.TessBaseAPIInit3(tesseract, tessdata, languages)) {
        cdecoder_set_error("Tesseract cannot load its language data");
        return -1;
    }
    // One column of lines, as receipts are: a total's label and its amount stay one line.
    lib.TessBaseAPISetPageSegMode(tesseract, PSM_SINGLE_COLUMN);
    char pdf[1024];
    size_t length = warm_pdf(pdf, sizeof pdf);
    int pages = 0;
    if (creader_pdf_open(pdf, length, &pages) || pages != 1) return -1;
    if (creader_pdf_text(0, 4096, ignore_glyph, NULL) < 0) return -1;
    VipsImage *image = NULL;
    double average = 0;
    if (vips_pdfload_buffer(pdf, length, &image, "dpi", 72.0, NULL) || vips_avg(image, &average, NULL)) {
        if (image) g_object_unref(image);
        cdecoder_keep_error("poppler cannot render a PDF");
        return -1;
    }
    g_object_unref(image);
    return 0;
}

void creader_end(void) {
    if (document) { g_object_unref(document); document = NULL; }
    if (tesseract) { lib.TessBaseAPIEnd(tesseract); lib.TessBaseAPIDelete(tesseract); tesseract = NULL; }
}

/// The page as Tesseract takes it: 8-bit grey, alpha flattened on white.
static VipsImage *grey_page(const void *buffer, size_t length, int page, int is_pdf, int long_edge) {
    VipsImage *decoded = NULL, *flat = NULL, *grey = NULL, *bytes = NULL;
    char options[32] = "";
    if (page > 0) snprintf(options, sizeof options, "page=%d", page);
    int failed;
    if (is_pdf) {
        // A page is rendered at 300 dpi, what Tesseract reads best, or
        // smaller to fit `long_edge`: its header gives its size in points.
        VipsImage *header = vips_image_new_from_buffer(buffer, length, options, NULL);
        if (!header) { cdecoder_keep_error("the PDF cannot be read"); return NULL; }
        double points = VIPS_MAX(vips_image_get_width(header), vips_image_get_page_height(header));
        g_object_unref(header);
        int edge = (int)VIPS_MIN((double)long_edge, points * 300.0 / 72.0);
        failed = cdecoder_thumbnail(buffer, length, options, VIPS_MAX(edge, 1), VIPS_SIZE_BOTH, &decoded);
    } else {
        failed = cdecoder_thumbnail(buffer, length, options, long_edge, VIPS_SIZE_DOWN, &decoded);
    }
    if (failed) { cdecoder_keep_error("the image cannot be decoded"); return NULL; }
    VipsImage *current = decoded;
    if (vips_image_hasalpha(current)) {
        VipsArrayDouble *white = vips_array_double_newv(1, 255.0);
        failed = vips_flatten(current, &flat, "background", white, NULL);
        vips_area_unref(VIPS_AREA(white));
        if (failed) { cdecoder_keep_error("the image cannot be flattened"); g_object_unref(decoded); return NULL; }
        current = flat;
    }
    failed = vips_colourspace(current, &grey, VIPS_INTERPRETATION_B_W, NULL);
    if (!failed) failed = vips_cast_uchar(grey, &bytes, NULL);
    if (flat) g_object_unref(flat);
    g_object_unref(decoded);
    if (grey) g_object_unref(grey);
    if (failed) { cdecoder_keep_error("the image cannot be made grey"); if (bytes) g_object_unref(bytes); return NULL; }
    return bytes;
}

int creader_recognize(const void *buffer, size_t length, int page, int is_pdf, int long_edge,
                      creader_word_fn word, void *context) {
    VipsImage *image = grey_page(buffer, length, page, is_pdf, long_edge);
    if (!image) return -1;
    size_t size = 0;
    void *pixels = vips_image_write_to_memory(image, &size);
    int width = vips_image_get_width(image), height = vips_image_get_height(image);
    g_object_unref(image);
    if (!pixels) { cdecoder_keep_error("the image cannot be decoded"); return -1; }
    if (size != (size_t)width * (size_t)height) { g_free(pixels); cdecoder_set_error("the image is not one grey band"); return -1; }
    lib.TessBaseAPISetImage(tesseract, pixels, width, height, 1, width);
    // Receipts are printed at about this: without it Tesseract guesses, and says so on stderr.
    lib.TessBaseAPISetSourceResolution(tesseract, 300);
    if (lib.TessBaseAPIRecognize(tesseract, NULL)) {
        lib.TessBaseAPIClear(tesseract);
        g_free(pixels);
        cdecoder_set_error("Tesseract cannot read the image");
        return -1;
    }
    TessResultIterator *iterator = lib.TessBaseAPIGetIterator(tesseract);
    if (iterator) {
        TessPageIterator *pages = lib.TessResultIteratorGetPageIterator(iterator);
        do {
            char *text = lib.TessResultIteratorGetUTF8Text(iterator, RIL_WORD);
            if (text && *text) {
                word(context, text, lib.TessResultIteratorConfidence(iterator, RIL_WORD), lib.TessPageIteratorIsAtBeginningOf(pages, RIL_TEXTLINE));
            }
            lib.TessDeleteText(text);
        } while (lib.TessResultIteratorNext(iterator, RIL_WORD));
        lib.TessResultIteratorDelete(iterator);
    }
    lib.TessBaseAPIClear(tesseract);
    g_free(pixels);
    return 0;
}

int creader_pdf_open(const void *buffer, size_t length, int *pages) {
    GBytes *bytes = g_bytes_new(buffer, length);
    GError *error = NULL;
    PopplerDocument *opened = lib.poppler_document_new_from_bytes(bytes, NULL, &error);
    g_bytes_unref(bytes);
    // The one before goes only now: poppler's global state lives while a
    // document does, and made again it would list poppler-data's folders,
    // which the sandbox no longer lets it open.
    if (document) g_object_unref(document);
    document = opened;
    if (!document) {
        cdecoder_set_error(error ? error->message : "poppler cannot open the PDF");
        if (error) g_error_free(error);
        return -1;
    }
    *pages = lib.poppler_document_get_n_pages(document);
    return 0;
}

int creader_pdf_text(int page, size_t max_bytes, creader_glyph_fn glyph, void *context) {
    PopplerPage *handle = document ? lib.poppler_document_get_page(document, page) : NULL;
    if (!handle) { cdecoder_set_error("the PDF has no such page"); return -1; }
    char *text = lib.poppler_page_get_text(handle);
    if (!text) { g_object_unref(handle); return 0; }
    if (strlen(text) > max_bytes) { g_free(text); g_object_unref(handle); return 1; }
    PopplerRectangle *boxes = NULL;
    guint count = 0;
    if (!lib.poppler_page_get_text_layout(handle, &boxes, &count)) count = 0;
    const char *character = text;
    char one[8];
    for (guint i = 0; i < count && *character; i++) {
        const char *next = g_utf8_next_char(character);
        size_t n = (size_t)(next - character);
        if (n < sizeof one) {
            memcpy(one, character, n);
            one[n] = 0;
            glyph(context, one, boxes[i].x1, boxes[i].y1, boxes[i].x2, boxes[i].y2);
        }
        character = next;
    }
    g_free(boxes);
    g_free(text);
    g_object_unref(handle);
    return 0;
}
