"""The window's pages by key (``PAGES``, their titles), each built the first time it is asked for (``Pages``)."""

from __future__ import annotations

from typing import Iterator, Mapping

from PySide6 import QtWidgets

PAGES = ["live", "breakdown", "division", "verify_cost", "tune", "context", "cases", "history", "compare", "content",
         "checks"]
PAGE_TITLES = {"live": "Live", "breakdown": "Breakdown", "division": "Division", "verify_cost": "Verify cost", "tune": "Tune", "context": "Context",
               "cases": "Cases", "history": "History", "compare": "Compare", "content": "By content", "checks": "Checks"}


class Pages(Mapping[str, QtWidgets.QWidget]):
    """The window's pages by key (``PAGES``), each built the first time it is asked for; iterating the values
    builds every page. ``built()``: the pages that exist so far, in ``PAGES`` order."""

    def __init__(self, make) -> None:
        self._make = make  # key -> the new page (it registers it with ``add``)
        self._built: dict[str, QtWidgets.QWidget] = {}

    def __getitem__(self, key: str) -> QtWidgets.QWidget:
        if key not in PAGE_TITLES:
            raise KeyError(key)
        page = self._built.get(key)
        return page if page is not None else self._make(key)

    def __iter__(self) -> Iterator[str]:
        return iter(PAGES)

    def __len__(self) -> int:
        return len(PAGES)

    def add(self, key: str, page: QtWidgets.QWidget) -> None:
        self._built[key] = page

    def built(self) -> dict[str, QtWidgets.QWidget]:  # dict: page key -> the page (the keys: the pages built so far)
        return {k: self._built[k] for k in PAGES if k in self._built}
