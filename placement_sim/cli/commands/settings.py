"""``placement-sim settings``: every configuration key the server reads, its default and its meaning."""

from __future__ import annotations

import argparse

from controller.config import SETTINGS, Setting


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = subparsers.add_parser(
        "settings",
        parents=[common],
        description="Every key of server.properties (or --set) the server reads, with its default and meaning.",
    )
    p.add_argument(
        "--markdown", action="store_true", help="as a Markdown table (the one in docs/configuration.md)"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    print("\n".join(markdown_table() if args.markdown else plain_lines()))
    return 0


def _default(setting: Setting) -> str:
    return setting.default or "none"


def markdown_table() -> list[str]:
    def cell(value: str) -> str:
        return value if value.lstrip("-").isdigit() or value in ("none", "true", "false") else f"`{value}`"

    rows = ["| key | default | meaning |", "|---|---|---|"]
    rows += [f"| `{s.key}` | {cell(_default(s))} | {s.meaning} |" for s in SETTINGS]
    return rows


def plain_lines() -> list[str]:
    width = max(len(s.key) for s in SETTINGS)
    return [f"{s.key:<{width}}  {_default(s):<12}  {s.meaning}" for s in SETTINGS]
