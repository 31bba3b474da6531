"""Finds the project's spec files (``schemas/``), installed or editable.

The repository keeps them in ``schemas/`` beside this ``protocol`` package; the wheel carries them as
package data of ``protocol`` (``protocol/schemas/``, copied there by setup.py), so that no top-level
``schemas`` is installed to collide with a user's own module of that name.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

SPECS_FOLDER = "schemas"
MARKER = "errors.json"


def project_schemas() -> Traversable:
    """The folder of the project's spec files and ``errors.json``.

    Installed from a wheel: ``protocol/schemas``. From a checkout (an editable install, or the
    repository on ``sys.path``): the ``schemas/`` folder beside the ``protocol`` package. Both are
    looked for as plain folders first; only a package installed where files are not folders (a zip)
    is read through importlib.resources, whose import (tempfile, zipfile) a server's start need not pay.
    """
    here = Path(__file__).resolve().parent
    for folder in (here / SPECS_FOLDER, here.parent / SPECS_FOLDER):
        if (folder / MARKER).is_file():
            return folder
    import importlib.resources

    installed = importlib.resources.files(__package__).joinpath(SPECS_FOLDER)
    if installed.joinpath(MARKER).is_file():
        return installed
    raise FileNotFoundError(f"no {SPECS_FOLDER!r} folder with {MARKER} beside or inside the protocol package")
