"""report.html in a browser: headless Chromium lays it out in a 1,400 px wide window, as a reader's
would be, and the page must not scroll sideways (a wide table scrolls inside its own box instead)."""

from __future__ import annotations

from pathlib import Path

from tests.support.browser import measure_page

WIDTH = 1400


def _assert_fits(measured: dict, page: Path) -> None:
    assert measured["innerWidth"] == WIDTH
    room = measured["clientWidth"]  # the window less its vertical scroll bar
    assert room <= WIDTH
    assert measured["wider"] == [], "reach past the window's right edge"
    assert measured["scrollWidth"] <= room, "the page scrolls sideways"
    assert measured["scrollWidth"] <= WIDTH  # document.documentElement.scrollWidth
    text = page.read_text(encoding="utf-8")
    assert len(measured["boxes"]) == text.count("<table") > 0
    for box in measured["boxes"]:
        assert box["overflowX"] == "auto" and box["right"] <= room
    assert len(measured["images"]) == 3
    for image in measured["images"]:
        assert 0 < image["width"] <= image["natural"] and image["right"] <= room, image["alt"]


def test_the_small_sweeps_report_fits_a_1400_px_window(spark_sweep, tmp_path) -> None:
    page = Path(spark_sweep.report)
    _assert_fits(measure_page(page, tmp_path, width=WIDTH), page)


def test_long_placer_names_make_a_table_scroll_in_its_box_not_the_page(long_names_sweep, tmp_path) -> None:
    page = Path(long_names_sweep.report)
    measured = measure_page(page, tmp_path, width=WIDTH)
    _assert_fits(measured, page)
    # The file path of a placer is too long for some tables: those scroll inside their own box.
    assert any(box["table"] > box["width"] for box in measured["boxes"])
