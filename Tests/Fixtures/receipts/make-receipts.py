#!/usr/bin/env python3
"""Renders the receipt corpus that ReceiptReadingTests and bench-read read.

Every receipt is made here, none downloaded: its text is set with pango
(`pango-view`, DejaVu fonts), then ImageMagick (`convert`) makes it grey,
skews and soils it like a phone photo, img2pdf wraps a scan in a PDF with
no text layer, pango writes a PDF with one, Ghostscript joins two pages, and
a PDF whose text layer is garbage over a scanned page is written out by
hand below. expected.json gives each file's fields as a person reads them.

Usage: Tests/Fixtures/receipts/make-receipts.py   (from the package root)
Needs: pango1.0-tools, fonts-dejavu-core, imagemagick, img2pdf,
ghostscript (Debian). The files are checked in: run this only to change them.
"""
import os
import random
import subprocess
import tempfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))

TILL_GB = """\
      FRESHWAY SUPERMARKET
    12 High Street, Leeds
    VAT No. GB 123 4567 89

MILK 2L                    1.45
BREAD WHOLEMEAL            1.20
BANANAS 1.02kg @ 0.79      0.81
COFFEE BEANS 500G          6.99
OLIVE OIL 1L               8.49
--------------------------------
SUBTOTAL                  18.94
VAT 20%                    3.16
TOTAL                    £18.94
CARD                      18.94
VISA ************4821
CHANGE                     0.00

03/04/2026 14:32   Till 4  #2231
   Thank you for shopping!
"""

RESTAURANT_US = """\
          THE GREEN OLIVE
    418 Mission St, San Francisco
           (415) 555-0142

Server: Ana              Table 12
Guests: 2             Check #5521
04/18/2026                8:41 PM

2 Margherita Pizza         $36.00
1 Caesar Salad             $11.50
2 Sparkling Water           $7.00
1 Tiramisu                  $9.50

Subtotal                   $64.00
Sales Tax 8.625%            $5.52
Total                      $69.52
Tip                        $12.00
Total                      $81.52

VISA ************1234
Approved          Auth 045521
Amount                     $81.52

Suggested gratuity:
18%  $11.52        20%  $12.80
"""

HOTEL_CH = """\
HOTEL BELLEVUE ZÜRICH
Bahnhofstrasse 12, 8001 Zürich
UID CHE-123.456.789 MWST

INVOICE  No. 2026-0412                 Date: 12.03.2026

Guest: A. Example
Arrival: 09.03.2026          Departure: 12.03.2026

Description                      Qty      Amount
Room (Superior double)             3    1'260.00
City tax                           3       16.50
Breakfast                          6      174.00

Subtotal                                1'450.50
VAT 8.1% included                         108.82
Total CHF                               1'450.50

Paid by Mastercard ****5512             1'450.50
Thank you for staying with us.
"""

FURNITURE_DE = """\
        MÖBELHAUS NORD GmbH
   Industriestraße 7, 20095 Hamburg
      USt-IdNr. DE123456789

Rechnung Nr. 88231     Datum: 21.02.2026

Pos  Artikel                   Betrag
1    Sofa Lund 3-Sitzer      1.099,00
2    Couchtisch Eiche          189,00
3    Lieferung                  49,90

Zwischensumme              1.337,90
enthaltene MwSt 19%          213,61
Gesamtbetrag EUR           1.337,90

Bezahlt mit girocard       1.337,90
  Vielen Dank für Ihren Einkauf!
"""

CAFE_FR = """\
        CAFÉ DES ARTS
 12 rue de la Paix, 75002 Paris
   SIRET 123 456 789 00012

 Le 14/03/2026 à 10:42   Table 4

 2 Café crème            7,00
 1 Croissant             2,20
 1 Jus d'orange          4,50

 Total HT               12,45
 TVA 10%                 1,25
 TOTAL TTC              13,70 €
 CB                     13,70 €
    Merci de votre visite
"""

ELECTRONICS_US = """\
      ACME ELECTRONICS #0412
    2200 Market Ave, Denver CO

03/05/2026     15:07     REG 3

65in 4K TV              1,149.00
HDMI CABLE 2M              19.99
WALL MOUNT                 79.99

SUBTOTAL                1,248.98
SALES TAX 7.65%            95.55
TOTAL USD               1,344.53

MASTERCARD ****8812     1,344.53
CHANGE DUE                  0.00
ITEMS SOLD 3
RETURNS ACCEPTED UNTIL 04/04/2026
"""

PHARMACY_GB = """\
     CITY PHARMACY
  Date 2026-01-09  11:20

Paracetamol 16        2.49
Plasters              3.10

TOTAL GBP             5.59
Contactless           5.59
"""

INVOICE_PAGE1 = """\
Nordlicht Software GmbH
Am Hafen 3, 24103 Kiel

INVOICE 2026-017
Invoice date: 28 February 2026

Client: Example Ltd, London

Item                                   Amount
Consulting, 16 hours at EUR 125.00   2,000.00
"""

INVOICE_PAGE2 = """\
Nordlicht Software GmbH            Page 2 of 2

Net amount                       EUR 2,000.00
VAT 19%                          EUR   380.00
Amount due                       EUR 2,380.00

Payment due by 30 March 2026 to IBAN DE89 3704 0044 0532 0130 00
"""


def run(*args):
    subprocess.run(args, check=True)


def pango(text, out, font, dpi=200, margin=24):
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8") as f:
        f.write(text)
    try:
        run("pango-view", "-q", f"--font={font}", f"--dpi={dpi}", f"--margin={margin}", "-o", out, f.name)
    finally:
        os.unlink(f.name)


def grey_png(text, name, font, dpi=200):
    with tempfile.TemporaryDirectory() as work:
        raw = os.path.join(work, "raw.png")
        pango(text, raw, font, dpi)
        run("convert", raw, "-colorspace", "Gray", "-depth", "8", "-strip", os.path.join(HERE, name))


def scanned_pdf(text, name, font):
    """A page scanned at 150 dpi: a grey JPEG in a PDF, no text layer."""
    with tempfile.TemporaryDirectory() as work:
        raw, jpeg = os.path.join(work, "raw.png"), os.path.join(work, "scan.jpg")
        pango(text, raw, font, dpi=150, margin=60)
        run("convert", raw, "-colorspace", "Gray", "-seed", "17", "-attenuate", "0.15", "+noise", "Gaussian", "-quality", "75", "-strip", jpeg)
        run("img2pdf", "--pagesize", "A5", "-o", os.path.join(HERE, name), jpeg)


def photo_jpeg(text, name, font):
    """Like a phone photo of a receipt on a table: skewed, soiled, uneven light, noisy."""
    with tempfile.TemporaryDirectory() as work:
        raw = os.path.join(work, "raw.png")
        pango(text, raw, font, dpi=220, margin=30)
        run("convert", raw, "-background", "#b9b2a4", "-rotate", "-4", "(", "+clone", "-sparse-color", "Barycentric",
            "0,0 #ffffff %w,%h #8c8c8c", ")", "-compose", "Multiply", "-composite",
            "-seed", "14", "-attenuate", "0.5", "+noise", "Gaussian", "-blur", "0x0.6", "-quality", "70", "-strip", os.path.join(HERE, name))


def text_pdf(text, out, font):
    pango(text, out, font, dpi=72, margin=40)


def garbage_layer_pdf(text, name, font):
    """A scan whose invisible text layer is garbage (a scanner's OCR gone
    wrong, or a font without a Unicode map): a JPEG page and, in render
    mode 3, lines of Latin-1 letters and signs that are no words at all."""
    with tempfile.TemporaryDirectory() as work:
        raw, jpeg = os.path.join(work, "raw.png"), os.path.join(work, "scan.jpg")
        pango(text, raw, font, dpi=150, margin=60)
        run("convert", raw, "-colorspace", "Gray", "-quality", "80", "-strip", jpeg)
        size = subprocess.run(["identify", "-format", "%w %h", jpeg], check=True, capture_output=True, text=True).stdout.split()
        width, height = int(size[0]), int(size[1])
        image = open(jpeg, "rb").read()
    points_w, points_h = width * 72 / 150, height * 72 / 150
    rng = random.Random(28)
    alphabet = bytes(range(0xC0, 0x100)) + b"%&+<>=@^_~"
    lines = []
    for row in range(12):
        junk = bytes(rng.choice(alphabet) for _ in range(36)).replace(b"\\", b"").replace(b"(", b"").replace(b")", b"")
        lines.append(b"1 0 0 1 20 %d Tm (" % int(points_h - 30 - row * 14) + junk + b") Tj")
    content = (b"q %.2f 0 0 %.2f 0 0 cm /Im0 Do Q\nBT 3 Tr /F1 10 Tf\n" % (points_w, points_h)) + b"\n".join(lines) + b"\nET"
    stream = zlib.compress(content)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %.2f %.2f] /Contents 4 0 R "
        b"/Resources << /XObject << /Im0 5 0 R >> /Font << /F1 6 0 R >> >> >>" % (points_w, points_h),
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray /BitsPerComponent 8 "
        b"/Filter /DCTDecode /Length %d >>\nstream\n" % (width, height, len(image)) + image + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    ]
    write_pdf(objects, os.path.join(HERE, name))


def write_pdf(objects, path):
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    with open(path, "wb") as f:
        f.write(out)


def text_bomb_pdf(path):
    """Hostile: a few kilobytes that inflate to 650 KB of text, all of it on
    the page: five columns of 1-point type, a line every 1.2 points."""
    text = b"(" + b"RECEIPT TOTAL 12.50 " * 10 + b") Tj\n"
    lines = [b"1 0 0 1 %d %.1f Tm " % (10 + 115 * column, 830 - 1.2 * row) + text for row in range(680) for column in range(5)]
    content = b"BT /F1 1 Tf\n" + b"".join(lines) + b"ET"
    stream = zlib.compress(content, 9)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    write_pdf(objects, path)


def main():
    mono, sans = "DejaVu Sans Mono 10", "DejaVu Sans 10"
    grey_png(TILL_GB, "till-gb.png", mono)
    grey_png(RESTAURANT_US, "restaurant-us.png", "DejaVu Sans Mono 9")
    grey_png(ELECTRONICS_US, "electronics-us.png", mono, dpi=180)
    text_pdf(HOTEL_CH, os.path.join(HERE, "hotel-ch.pdf"), "DejaVu Sans Mono 9")
    scanned_pdf(FURNITURE_DE, "furniture-de-scan.pdf", "DejaVu Sans Mono 10")
    photo_jpeg(CAFE_FR, "cafe-fr-photo.jpg", "DejaVu Sans Mono 10")
    garbage_layer_pdf(PHARMACY_GB, "pharmacy-gb-garbage-layer.pdf", "DejaVu Sans Mono 11")
    with tempfile.TemporaryDirectory() as work:
        first, second = os.path.join(work, "1.pdf"), os.path.join(work, "2.pdf")
        text_pdf(INVOICE_PAGE1, first, sans)
        text_pdf(INVOICE_PAGE2, second, sans)
        run("gs", "-q", "-dNOPAUSE", "-dBATCH", "-sDEVICE=pdfwrite", "-o", os.path.join(HERE, "invoice-de-2pages.pdf"), first, second)
    os.makedirs(os.path.join(HERE, "hostile"), exist_ok=True)
    text_bomb_pdf(os.path.join(HERE, "hostile", "text-bomb.pdf"))


if __name__ == "__main__":
    main()
