"""The wheel's one step beyond pyproject.toml: the Kafka-format specs of ``schemas/`` go in as
``protocol/schemas/*.json``, package data of ``protocol`` (no top-level ``schemas`` is installed).

An editable install is a ``.pth`` file naming the checkout, where :mod:`protocol.resources` reads the
specs from ``schemas/`` itself; nothing is copied then.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

SPECS = Path(__file__).resolve().parent / "schemas"


class BuildWithSpecs(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        target = Path(self.build_lib, "protocol", "schemas")
        self.mkpath(str(target))
        for spec in sorted(SPECS.glob("*.json")):
            self.copy_file(str(spec), str(target / spec.name))


setup(cmdclass={"build_py": BuildWithSpecs})
