"""Finds the project's spec files (``schemas/``), installed or editable.

The repository keeps them in ``schemas/`` beside this ``protocol`` package; the wheel carries them as
package data of ``protocol`` (``protocol/schemas/``, copied there by setup.py), so that no top-level
``schemas`` is installed to collide with a user's own module of that name.
"""

from __future__ import annotations

import importlib.resources
from importlib.resources.abc import Traversable
from pathlib import Path

SPECS_FOLDER = "schemas"
MARKER = "errors.json"


def project_schemas() -> Traversable:
    """The folder of the project's spec files and ``errors.json``.

    Installed from a wheel: ``protocol/schemas`` (read through importlib.resources, so a zipped
    installation works too). From a checkout (an editable install, or the repository on ``sys.path``):
    the ``schemas/`` folder beside the ``protocol`` package.
    """
    installed = importlib.resources.files(__package__).joinpath(SPECS_FOLDER)
    if installed.joinpath(MARKER).is_file():
        return installed
    checkout = Path(__file__).resolve().parent.parent / SPECS_FOLDER
    if (checkout / MARKER).is_file():
        return checkout
    raise FileNotFoundError(f"no {SPECS_FOLDER!r} folder with {MARKER} beside or inside the protocol package")
