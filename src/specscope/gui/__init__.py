"""The specscope desktop app (PySide6 + pyqtgraph). Never imports mlx."""

from ._compat import protect_singletons

protect_singletons()
