"""Report renderers that draw charts with the app's own chart code (HTML, PDF).

``html`` and ``pdf`` expose ``render(session)``; they are registered as ``specscope.renderers``
entry points, so the core finds them without naming the app. Qt is imported only when a chart
or a PDF is actually drawn.
"""
