"""The HTML (and PDF) report of a DFlash session: k = 15 positions must not widen its tables past the page, and
a break-even out of reach is said in words, not as a negative multiple."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from specscope.profiler.session.session import Session

DFLASH = Path(__file__).resolve().parent / "fixtures" / "session_dflash_quick.json"


@pytest.fixture(scope="module")
def pages():
    from specscope.gui.reports import html

    s = Session.load(str(DFLASH))
    return {t: html.build(s, charts={}, target=t) for t in ("screen", "print")}


def _tables(page: str) -> list[str]:
    return re.findall(r"<table.*?</table>", page, flags=re.S)


def _columns(table: str) -> int:
    head = re.search(r"<tr>(.*?)</tr>", table, flags=re.S)
    return len(re.findall(r"<th\b", head.group(1))) if head else 0


@pytest.mark.parametrize("target", ["screen", "print"])
def test_no_table_grows_a_column_per_position(pages, target):
    """The acceptance table had 7 + 15 columns (a1 … a15), cut off at the page's right edge."""
    heads = re.findall(r"<th[^>]*>(.*?)</th>", pages[target], flags=re.S)
    assert not [h for h in heads if re.fullmatch(r"a\d+", h)], "a column per position"
    acceptance = next(t for t in _tables(pages[target]) if "E (tokens / round)" in t)
    assert _columns(acceptance) == 7


@pytest.mark.parametrize("target", ["screen", "print"])
def test_positions_are_rows_of_their_own_table(pages, target):
    page = pages[target]
    assert "Per position (k = 15)" in page
    table = next(t for t in _tables(page) if ">Position<" in t)
    assert [f"a{i}" for i in range(1, 16)] == re.findall(r">(a\d+)</td>", table)
    assert _columns(table) == 1 + 3 + 1  # code, en, zh and all


def test_the_summary_value_cell_stays_short(pages):
    """The value cells do not wrap (numbers): fifteen "a_i = …" in one made the table three page widths wide."""
    row = re.search(r"<tr[^>]*><td[^>]*>Per-position a_i</td><td[^>]*>(.*?)</td><td[^>]*>(.*?)</td>", pages["screen"], flags=re.S)
    assert row, "no per-position row"
    value, what = row.groups()
    assert len(value) < 40 and "…" in value and "a15" in value
    assert "a8 = " in what  # every position is still listed, where the text wraps


def test_break_even_out_of_reach_in_words(pages):
    page = pages["screen"]
    assert "here ≤ -" not in page
    assert "the break-even line is out of reach" in page
    assert re.search(r"measured 9\.02 × T_decode", page)


def _row(page: str, name: str) -> str:
    rows = [r for r in re.findall(r"<tr[^>]*>(.*?)</tr>", page, flags=re.S)
            if re.match(rf"\s*<td[^>]*>{re.escape(name)}</td>", r)]
    assert len(rows) == 1, (name, rows)
    return rows[0]


def test_the_rollback_row_says_what_rollback_is_and_the_division_has_its_own(pages):
    """The Summary's Rollback row described itself with the bare division's sentence; the division is its own row."""
    rollback = _row(pages["screen"], "Rollback")
    assert "restoring the caches" in rollback and "by hand" not in rollback
    assert "by hand, without the rollback" in _row(pages["screen"], "The seed's division")


def test_the_protocol_section_calls_the_rates_what_they_are(pages):
    """The rates beside it are pooled over every repeat (tokens ÷ time, as the summary computes them), not medians:
    the section said "Medians over repeats" while printing pooled rates."""
    for page in pages.values():
        section = page[page.index("Protocol: order, repeats, drift"):]
        assert "pooled over every repeat" in section[:600] and "Medians over repeats" not in page
