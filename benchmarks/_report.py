"""What every benchmark writes: its result as JSON and its rows as a PNG bar chart."""

from __future__ import annotations

import datetime
import json
import os
from typing import Optional, Sequence


def bar_chart(rows: dict, path: str, *, xlabel: str, title: str, unit: str, digits: int = 2,
              highlight: str = "torch_tile", log: bool = False, colours: Optional[dict] = None,
              legend: Optional[dict] = None, lines: Sequence[float] = ()) -> bool:
    """Horizontal bars, one per row (rows containing ``highlight`` in blue, or each row in ``colours[row]``
    where given, explained by ``legend``: label -> colour), with dotted vertical ``lines`` at those values;
    False when matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    names = list(rows)[::-1]
    values = [rows[n] for n in names]
    fig, ax = plt.subplots(figsize=(8, 0.35 * len(names) + 1.2))
    if colours is not None:
        colour = [colours.get(n, "#999999") for n in names]
    else:
        colour = ["#4c72b0" if highlight in n else "#999999" for n in names]
    bars = ax.barh(names, values, color=colour)
    ax.bar_label(bars, labels=[f"{v:.{digits}f} {unit}" for v in values], padding=3)
    for x in lines:
        ax.axvline(x, color="#555555", linestyle=":", linewidth=1)
    if legend:
        from matplotlib.patches import Patch

        ax.legend(handles=[Patch(color=c, label=label) for label, c in legend.items()], loc="lower right")
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    if log:
        ax.set_xscale("log")
    else:
        ax.set_xlim(0, max([*values, *lines]) * 1.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def write(out_dir: str, name: str, result: dict, rows: dict, **chart) -> None:
    """``<name>.json`` (the whole result, dated: UTC day of the run) and ``<name>.png`` (the rows) in
    ``out_dir``."""
    result = {"date": datetime.datetime.now(datetime.timezone.utc).date().isoformat(), **result}
    with open(os.path.join(out_dir, name + ".json"), "w") as f:
        json.dump(result, f, indent=2)
    if not bar_chart(rows, os.path.join(out_dir, name + ".png"), **chart):
        print("matplotlib not available: no PNG written")
