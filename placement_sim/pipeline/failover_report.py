"""The report's section on simulated failures: a placer x election policy heat map per failure kind,
and one sentence per kind naming the best placer and policy.

It reads the ``failover_impact`` aggregate (:mod:`placement_sim.pipeline.aggregates`). "Best" means
the fewest partition-seconds without a leader (mean over the runs), ties broken by the fewest
partitions offline at the worst moment, then by the fewest under-replicated partition-seconds, then by
name: availability first, then durability.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Mapping

import pandas as pd
from matplotlib.figure import Figure

__all__ = [
    "FAILURE_TITLES",
    "best_per_failure",
    "failover_sentences",
    "heatmap_figure",
    "ranked_first",
    "section",
]

#: How the report names each failure kind.
FAILURE_TITLES = {
    "none": "No failure",
    "broker": "A broker crash",
    "rack": "Losing a rack",
    "dc": "Losing a data centre",
    "rolling": "A rolling restart",
    "slow-follower": "A crash with a slow follower",
}

#: The heat map's figure: partition-seconds without a leader, mean over the runs.
MEASURE = "leaderless_partition_s_mean"
_ORDER = (MEASURE, "offline_worst_mean", "under_replicated_partition_s_mean")


def _kinds(impact: pd.DataFrame) -> list[str]:
    present = set(impact["failure"])
    return [k for k in FAILURE_TITLES if k in present] + sorted(present - set(FAILURE_TITLES))


def ranked_first(rows: pd.DataFrame) -> pd.Series:
    """The best row of one failure kind's rows (see the module docstring)."""
    return rows.sort_values([*_ORDER, "placer", "policy"], kind="mergesort", na_position="last").iloc[0]


def best_per_failure(impact: pd.DataFrame) -> dict[str, tuple[str, str, float]]:
    """Failure kind -> (placer, policy, partition-seconds without a leader) of the best pair."""
    best: dict[str, tuple[str, str, float]] = {}
    for kind in _kinds(impact):
        top = ranked_first(impact[impact["failure"] == kind])
        best[kind] = (str(top["placer"]), str(top["policy"]), float(top[MEASURE]))
    return best


def _name(name: str, names: Mapping[str, str]) -> str:
    return f"<b>{html.escape(names.get(name, name))}</b>"


def failover_sentences(impact: pd.DataFrame, names: Mapping[str, str] | None = None) -> list[str]:
    """One HTML sentence per failure kind: the best placer and policy, and how the worst pair did."""
    names = names or {}
    sentences = []
    for kind, (placer, policy, value) in best_per_failure(impact).items():
        rows = impact[impact["failure"] == kind]
        worst = rows.sort_values([MEASURE, "placer", "policy"], ascending=[False, True, True]).iloc[0]
        text = (
            f"{html.escape(FAILURE_TITLES.get(kind, kind))}: {_name(placer, names)} placement with the "
            f"{_name(policy, names)} election policy does best, {value:,.1f} partition-seconds without a "
            "leader on average"
        )
        tied = rows[(rows[list(_ORDER)] == ranked_first(rows)[list(_ORDER)]).all(axis=1)]
        if len(tied) > 1:
            text += f", tied with {len(tied) - 1} other pair{'s' if len(tied) > 2 else ''}"
        if float(worst[MEASURE]) > value:
            text += (
                f" (worst: {html.escape(names.get(worst['placer'], worst['placer']))} with "
                f"{html.escape(names.get(worst['policy'], worst['policy']))}, {float(worst[MEASURE]):,.1f})"
            )
        sentences.append(text + ".")
    return sentences


def heatmap_figure(impact: pd.DataFrame, names: Mapping[str, str] | None = None) -> Figure:
    """One panel per failure kind: placers down, policies across, colour and number = :data:`MEASURE`."""
    names = names or {}
    kinds = _kinds(impact)
    placers = sorted(set(impact["placer"]))
    policies = sorted(set(impact["policy"]))
    top = max(float(impact[MEASURE].max()), 1e-9)
    columns = min(3, len(kinds))
    lines = -(-len(kinds) // columns)
    width = 1.8 + 1.3 * len(policies)
    fig = Figure(figsize=(width * columns, (1.0 + 0.45 * len(placers)) * lines), layout="constrained")
    cells = fig.subplots(lines, columns, squeeze=False).ravel()
    for ax in cells[len(kinds) :]:
        ax.set_axis_off()
    axes = list(cells[: len(kinds)])
    for ax, kind in zip(axes, kinds, strict=True):
        rows = impact[impact["failure"] == kind].set_index(["placer", "policy"])[MEASURE]
        grid = [[rows.get((p, q), float("nan")) for q in policies] for p in placers]
        ax.imshow(grid, cmap="Reds", vmin=0.0, vmax=top, aspect="auto")
        for i, line in enumerate(grid):
            for j, value in enumerate(line):
                if pd.notna(value):
                    dark = value > top * 0.6
                    ax.text(
                        j,
                        i,
                        f"{value:,.1f}",
                        ha="center",
                        va="center",
                        fontsize=8,
                        color="white" if dark else "black",
                    )
        ax.set_xticks(range(len(policies)), [names.get(q, q) for q in policies], fontsize=8, rotation=20)
        ax.set_yticks(range(len(placers)), [names.get(p, p) for p in placers], fontsize=8)
        ax.set_title(FAILURE_TITLES.get(kind, kind), fontsize=9)
        ax.set_xlabel("election policy", fontsize=8)
        ax.set_ylabel("placer", fontsize=8)
    return fig


def _png(fig: Figure) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def section(impact: pd.DataFrame | None, title: str, names: Mapping[str, str] | None = None) -> list[str]:
    """The section's HTML parts (none when the sweep simulated no failure)."""
    if impact is None or impact.empty:
        return []
    png = _png(heatmap_figure(impact, names))
    return [
        f"<h2>{html.escape(title)}</h2>",
        '<ul class="summary">',
        *(f"<li>{sentence}</li>" for sentence in failover_sentences(impact, names)),
        "</ul>",
        f'<img src="data:image/png;base64,{png}" alt="partition-seconds without a leader per placer and '
        'election policy, one panel per failure kind">',
        '<p class="note">Each failure runs through the controller\'s own dynamics and election code on a '
        "virtual clock. Cell: partition-seconds without a leader (no leader, or a leader whose broker is "
        "down), mean over the runs; darker is worse. The table gives every figure, and the static "
        "formula's beside them (static disagreements: runs where the static formula's offline partitions "
        "or busiest broker differ from the simulation's).</p>",
    ]
