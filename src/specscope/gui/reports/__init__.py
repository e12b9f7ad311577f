"""Report renderers that draw charts (HTML, PDF) and the two-session comparison page.

``html`` and ``pdf`` expose ``render(session)`` for ``profiler.renderers``;
``compare_html`` renders what ``profiler.compare`` computes. Qt is imported only
when a chart or a PDF is actually drawn.
"""
