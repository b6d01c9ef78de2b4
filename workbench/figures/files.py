"""Writing a finished figure to an image file: the one place the figures save and close."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

__all__ = ["save_figure"]


def save_figure(fig, out, *, dpi: int, tight: bool = False) -> Path:
    """Write ``fig`` to ``out`` (its folder created if needed), close it, return the path.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
    out : str or Path
        Image file; the suffix picks the format (``.png``, ``.pdf``, ``.svg``).
    dpi : int
        Resolution of raster formats.
    tight : bool
        Crop the margins to the drawn content (``bbox_inches="tight"``).
    """
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=dpi, **({"bbox_inches": "tight"} if tight else {}))
    plt.close(fig)
    return out
