"""Finds the project's ``schemas/`` folder, installed or editable, through importlib.resources."""

from __future__ import annotations

import importlib
import importlib.resources
import logging
from importlib.resources.abc import Traversable
from pathlib import Path

log = logging.getLogger(__name__)

SCHEMAS_PACKAGE = "schemas"
MARKER = "errors.json"


def project_schemas() -> Traversable:
    """The ``schemas`` package data: the project's spec files and ``errors.json``.

    ``schemas`` is a namespace package (data only), so importlib may see several folders under that
    name, or none it can open (Python 3.11 cannot read a namespace package whose path holds an
    editable install's hook). A single folder is used as importlib gives it; otherwise the one beside
    this ``protocol`` package wins, as it comes from the same installation.
    """
    try:
        root = importlib.resources.files(SCHEMAS_PACKAGE)
    except (NotADirectoryError, TypeError) as exc:
        log.debug("importlib.resources cannot open %s (%s); looking at its folders", SCHEMAS_PACKAGE, exc)
    else:
        if isinstance(root, Path) and root.is_dir():
            return root
    package = importlib.import_module(SCHEMAS_PACKAGE)
    folders = [Path(entry) for entry in getattr(package, "__path__", []) if Path(entry).is_dir()]
    beside_us = (Path(__file__).resolve().parent.parent / SCHEMAS_PACKAGE).resolve()
    for folder in folders:
        if folder.resolve() == beside_us:
            return folder
    for folder in folders:
        if (folder / MARKER).is_file():
            return folder
    raise FileNotFoundError(f"no {SCHEMAS_PACKAGE!r} folder with {MARKER} is importable")
