"""The specscope desktop app (PySide6 + pyqtgraph). Never imports mlx."""

from ._qt_fixes import protect_singletons

protect_singletons()
