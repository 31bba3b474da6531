"""Looking at a page as a person would: headless Chromium lays it out at a given window size.

``measure_page`` copies the page, adds a script that measures the laid-out page once it has loaded
(the page itself has no script), and reads the measurements back from ``--dump-dom``. Chromium is a
system package (``make system-deps`` installs Debian's ``chromium``); without it the tests that use it
fail, saying so.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

#: Chromium's names on Debian, Ubuntu and others.
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")

#: A quiet, private, offline browser: no first-run pages, no updates, no sync, no network chatter.
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
)

#: Runs on load; writes what a reader's window shows into ``<pre id="measured">`` as JSON.
_MEASURE = """<script>
addEventListener("load", () => {
  const root = document.documentElement;
  const width = root.clientWidth;
  const describe = (el) => el.tagName.toLowerCase() + (el.className ? "." + el.className : "") + " "
    + JSON.stringify((el.textContent || el.getAttribute("alt") || "").trim().slice(0, 60));
  const wider = [...document.body.querySelectorAll("*")]
    .filter((el) => !el.closest(".table-box") && el.getBoundingClientRect().right > width + 0.5)
    .map(describe);
  const boxes = [...document.querySelectorAll(".table-box")].map((box) => ({
    overflowX: getComputedStyle(box).overflowX,
    right: box.getBoundingClientRect().right,
    width: box.clientWidth,
    table: box.querySelector("table").getBoundingClientRect().width,
  }));
  const images = [...document.images].map((img) => ({
    alt: img.alt, width: img.getBoundingClientRect().width, natural: img.naturalWidth,
    right: img.getBoundingClientRect().right,
  }));
  const out = {
    innerWidth: window.innerWidth, clientWidth: width, scrollWidth: root.scrollWidth,
    bodyScrollWidth: document.body.scrollWidth, wider, boxes, images,
  };
  const pre = document.createElement("pre");
  pre.id = "measured";
  pre.textContent = JSON.stringify(out);
  document.body.append(pre);
});
</script>"""


def chromium() -> str:
    """The Chromium executable; fails the test (it is not skipped) when there is none."""
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    pytest.fail("Chromium is needed to look at the report: `make system-deps` installs Debian's chromium")


def chromium_command(page: Path, profile: Path, width: int, height: int, *extra: str) -> list[str]:
    return [
        chromium(),
        *CHROMIUM_FLAGS,
        f"--user-data-dir={profile}",
        f"--window-size={width},{height}",
        *extra,
        page.resolve().as_uri(),
    ]


def measure_page(page: Path, workdir: Path, width: int = 1400, height: int = 2000) -> dict[str, Any]:
    """Lays ``page`` out in a ``width`` x ``height`` window and returns what the window shows:
    innerWidth, clientWidth (the width left for the page), scrollWidth (the page's width: wider than
    clientWidth means the page scrolls sideways), the elements outside a table box that reach past the
    window's right edge, every table box and every image."""
    workdir.mkdir(parents=True, exist_ok=True)
    measured = workdir / "measured.html"
    text = page.read_text(encoding="utf-8")
    assert "</body>" in text, f"{page} has no </body>"
    measured.write_text(text.replace("</body>", _MEASURE + "</body>"), encoding="utf-8")
    command = chromium_command(measured, workdir / "profile", width, height, "--dump-dom")
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    found = re.search(r'<pre id="measured">([^<]*)</pre>', done.stdout)
    assert found, f"Chromium measured nothing (exit {done.returncode}): {done.stderr[-2000:]}"
    return json.loads(html.unescape(found.group(1)))
