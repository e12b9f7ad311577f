"""PDF report: the HTML report's print variant laid out by Qt's rich-text engine
(``QTextDocument``) and paginated onto A4 by ``QPdfWriter``, with page numbers.

Charts are the same offscreen images as in the HTML report, handed to the
document as resources (no files, no URLs).
"""

from __future__ import annotations

from . import charts as _charts
from specscope.profiler.renderers.html_common import PRINT_CSS
from .html import build, collect_charts  # the same charts

PAGE_MARGIN_MM = 14
RESOLUTION = 300  # dpi of the PDF coordinate system (text stays vector)


def render(session) -> bytes:
    return render_with_warnings(session)[0]


def render_with_warnings(session) -> tuple[bytes, list[str]]:
    """The PDF, and the charts it had to leave out and why (the report says so too)."""
    _charts.ensure_app()
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QMarginsF, QRectF, QSizeF, Qt, QUrl
    from PySide6.QtGui import (QAbstractTextDocumentLayout, QFont, QImage, QPageLayout, QPageSize,
                               QPainter, QPdfWriter, QTextDocument)

    images = collect_charts(session, width=780, height=380)  # smaller canvas: larger chart text on paper
    html = build(session, images, target="print")

    ba = QByteArray()
    buf = QBuffer(ba)
    buf.open(QIODevice.OpenModeFlag.WriteOnly)
    writer = QPdfWriter(buf)
    writer.setResolution(RESOLUTION)
    writer.setTitle("specscope report")
    writer.setCreator("specscope")
    layout = QPageLayout(QPageSize(QPageSize.PageSizeId.A4), QPageLayout.Orientation.Portrait,
                         QMarginsF(PAGE_MARGIN_MM, PAGE_MARGIN_MM, PAGE_MARGIN_MM, PAGE_MARGIN_MM),
                         QPageLayout.Unit.Millimeter)
    writer.setPageLayout(layout)

    # Lay the document out directly in the writer's device units (as QTextDocument.print does),
    # so point sizes come out right at print size.
    paint_rect = writer.pageLayout().paintRectPixels(RESOLUTION)
    footer_h = int(RESOLUTION * 0.22)
    page_w, page_h = float(paint_rect.width()), float(paint_rect.height() - footer_h)

    doc = QTextDocument()
    doc.documentLayout().setPaintDevice(writer)
    doc.setDocumentMargin(0)
    font = QFont("DejaVu Sans")
    font.setPointSizeF(9)
    doc.setDefaultFont(font)
    doc.setDefaultStyleSheet(PRINT_CSS)
    # ``build`` sizes chart images for a 640-unit column; here the column is the printable width.
    # Qt scales <img> sizes from 96-dpi units to the paint device's resolution.
    img_w = int(page_w * 0.92 * 96 / writer.logicalDpiX())
    for name, data in images.items():
        if data:
            img = QImage.fromData(data, "PNG")  # type: ignore[arg-type]  # PySide6's stub wants bytes; it takes only str
            if not img.isNull():
                doc.addResource(QTextDocument.ResourceType.ImageResource, QUrl(f"chart-{name}.png"), img)
                img_h = int(img_w * img.height() / max(1, img.width()))
                html = html.replace(f'<img src="chart-{name}.png" width="640">',
                                    f'<img src="chart-{name}.png" width="{img_w}" height="{img_h}">')
    doc.setHtml(html)
    doc.setPageSize(QSizeF(page_w, page_h))
    pages = max(1, doc.pageCount())

    painter = QPainter(writer)
    try:
        foot_font = QFont("DejaVu Sans")
        foot_font.setPointSizeF(7.5)
        for i in range(pages):
            if i:
                writer.newPage()
            painter.save()
            painter.translate(0, -i * page_h)
            ctx = QAbstractTextDocumentLayout.PaintContext()
            ctx.clip = QRectF(0, i * page_h, page_w, page_h)
            painter.setClipRect(ctx.clip)
            doc.documentLayout().draw(painter, ctx)
            painter.restore()
            painter.setFont(foot_font)
            painter.setPen(Qt.GlobalColor.darkGray)
            painter.drawText(QRectF(0, page_h, page_w, footer_h), int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignBottom),
                             f"specscope report · page {i + 1} of {pages}")
    finally:
        painter.end()
    buf.close()
    return bytes(ba.data()), images.warnings()
