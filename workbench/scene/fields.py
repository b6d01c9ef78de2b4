"""The vocabulary every part of a scene shares: the strict base model, field types, reserved names,
field paths as the user writes them, and the "did you mean" hint.

See ``docs/architecture.md`` (the scene wing).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

__all__ = [
    "StrictModel",
    "Vec3",
    "Vec4",
    "PosFloat",
    "NonNegFloat",
    "Name",
    "WORLD",
    "PARAMETERS_GROUP",
    "did_you_mean",
    "format_loc",
]

#: Name that stands for the fixed world frame in joints and springs.
WORLD = "world"

#: Group under which sampled scene parameters are stored (``/params/parameters/<name>``).
PARAMETERS_GROUP = "parameters"

_NAME = r"^[A-Za-z_][A-Za-z0-9_\-]*$"

Vec3 = tuple[float, float, float]
Vec4 = tuple[float, float, float, float]
PosFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegFloat = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Name = Annotated[str, Field(pattern=_NAME)]


def did_you_mean(word: str, options: Iterable[str]) -> str:
    """``" (did you mean 'x'?)"`` for the closest of ``options`` to ``word``, or ``""``.

    Closeness is difflib's ratio with its default cutoff 0.6.
    """
    near = difflib.get_close_matches(word, list(options), n=1)
    return f" (did you mean '{near[0]}'?)" if near else ""


def format_loc(loc: tuple) -> str:
    """``('bodies', 0, 'mass')`` -> ``'bodies[0].mass'``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


class StrictModel(BaseModel):
    """Base of every scene type: frozen, no inf/nan, unknown fields rejected with a suggestion."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _reject_unknown_fields(cls, data: Any) -> Any:
        if isinstance(data, dict):
            known = sorted(cls.model_fields)
            for key in data:
                if key not in cls.model_fields:
                    raise PydanticCustomError(
                        "unknown_field",
                        "unknown field{hint}; allowed: {allowed}",
                        {
                            "key": str(key),
                            "hint": did_you_mean(str(key), known),
                            "allowed": ", ".join(known),
                        },
                    )
        return data
