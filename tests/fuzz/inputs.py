"""Seeded generators of hostile inputs for the fuzz suite (issue 39): mutated hints files,
Markov tables and inference / inverse specs, and damaged HDF5 files, each paired with the
command lines that read them (``reverse --hints/--markov/--samples/--verify/--then-forward``,
``markov compare --table``, ``infer``, ``inverse``; ``inspect``, ``stats``, ``plot`` and
``replay`` for damaged files).

Every case is a function of ``(seed, index)`` alone, so a case the runner reports is made again
by ``python -m tests.fuzz.run --seed S --only INDEX``.
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from workbench.specs import dump_yaml, parse_yaml

__all__ = ["Case", "KINDS", "make_case", "mutate_data", "mutate_text", "REPO"]

REPO = Path(__file__).resolve().parents[2]

#: Values a mutation puts where a document had something else: wrong types, empty, non-finite,
#: huge, tiny, negative, references, control characters.
HOSTILE_VALUES: tuple[Any, ...] = (
    None, "", "abc", -1, 0, 1, 2.5, 1e308, -1e308, math.nan, math.inf, -math.inf, 1e-320,
    10**30, -(10**30), True, [], {}, [1, 2], [0, 0, 0], [math.nan, 0, 0], [1e30, 0, 0],
    {"a": 1}, "${x}", "\x00\x01", "é" * 3, "9" * 400, [[[[[]]]]],
)  # fmt: skip


@dataclass
class Case:
    """One fuzz input and the command that reads it.

    ``argv`` holds ``{input}``, ``{out}`` and ``{dir}`` placeholders, filled by :meth:`argv_in`;
    ``input_name`` is the name the command's refusals must mention.
    """

    index: int
    kind: str
    argv: list[str]
    input_name: str
    write: Callable[[Path], None]
    output: str | None = None  # the file (or folder) written on success, under the work dir
    notes: list[str] = field(default_factory=list)

    def argv_in(self, work: Path) -> list[str]:
        return [a.format(input=work / self.input_name, out=work / (self.output or "out"),
                         dir=work) for a in self.argv]  # fmt: skip


# -- mutations -------------------------------------------------------------------------------


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path to a node of a parsed document (the root excluded)."""
    out = []
    items = (
        node.items()
        if isinstance(node, dict)
        else enumerate(node)
        if isinstance(node, list)
        else ()
    )
    for k, v in items:
        out.append((*prefix, k))
        out.extend(_paths(v, (*prefix, k)))
    return out


def _parent(data: Any, path: tuple) -> tuple[Any, Any]:
    node = data
    for k in path[:-1]:
        node = node[k]
    return node, path[-1]


def mutate_data(data: Any, rng: np.random.Generator, rounds: int = 1) -> Any:
    """A copy of ``data`` (parsed YAML or JSON) with ``rounds`` mutations at random nodes:
    a value replaced by a hostile one, a key removed or added, a list item duplicated or
    dropped, a number scaled by a power of ten or its sign flipped."""
    data = json.loads(json.dumps(data))  # a deep copy of plain data
    for _ in range(rounds):
        paths = _paths(data)
        if not paths:
            return HOSTILE_VALUES[rng.integers(len(HOSTILE_VALUES))]
        path = paths[rng.integers(len(paths))]
        parent, key = _parent(data, path)
        op = rng.integers(6)
        value = parent[key]
        if op == 0 or (op == 4 and not isinstance(value, (int, float))):
            parent[key] = HOSTILE_VALUES[rng.integers(len(HOSTILE_VALUES))]
        elif op == 1:
            del parent[key]
        elif op == 2 and isinstance(parent, dict):
            parent[f"unknown_{rng.integers(100)}"] = HOSTILE_VALUES[
                rng.integers(len(HOSTILE_VALUES))
            ]
        elif op == 2:
            parent.insert(int(key), value)
        elif op == 3 and isinstance(value, list) and value:
            value.pop(int(rng.integers(len(value))))
        elif op == 3:
            parent[key] = [value, value]
        elif op == 4:
            parent[key] = value * 10.0 ** int(rng.integers(-12, 13)) * (-1) ** int(rng.integers(2))
        else:
            parent[key] = str(value) if not isinstance(value, str) else value[: len(value) // 2]
    return data


def mutate_text(text: str, rng: np.random.Generator) -> str:
    """``text`` damaged at the byte level: truncated, a run of characters removed, duplicated or
    replaced by junk (tabs, quotes, brackets, anchors, control characters)."""
    if not text:
        return "\x00"
    at = int(rng.integers(len(text)))
    op = rng.integers(4)
    if op == 0:
        return text[:at]
    span = int(rng.integers(1, 20))
    if op == 1:
        return text[:at] + text[at + span :]
    if op == 2:
        return text[:at] + text[at : at + span] * int(rng.integers(2, 50)) + text[at:]
    junk = "".join(rng.choice(list("\t\"'[]{}:&*!|>%@`\x00\x07\n -#,?"), size=span))
    return text[:at] + junk + text[at + span :]


def _yaml(data: Any) -> str:
    try:
        return dump_yaml(data)
    except Exception:  # noqa: BLE001 - a value YAML cannot write: write its JSON instead
        return json.dumps(data)


def _document(text: str, data: Any, rng: np.random.Generator, as_json: bool) -> str:
    """A mutated document: structure-level mostly, byte-level sometimes (both, rarely)."""
    mode = rng.random()
    if mode < 0.25:
        return mutate_text(text, rng)
    mutated = mutate_data(data, rng, rounds=int(rng.integers(1, 4)))
    out = json.dumps(mutated, indent=1) if as_json else _yaml(mutated)
    return mutate_text(out, rng) if mode > 0.95 else out


# -- the inputs and their commands -----------------------------------------------------------

HINTS = REPO / "scenes" / "reverse_landing.hints.yaml"
TABLE = REPO / "data" / "markov_block.json"
SPECS = {"infer": REPO / "specs" / "falling_object_example1.yaml",
         "inverse": REPO / "specs" / "du_impact_analytic.yaml"}  # fmt: skip

#: The reverse runs are short: the fuzz is of the inputs, not of the stepper's endurance.
SHORT = ["--duration", "0.05", "-q"]

HINTS_COMMANDS = (
    ["reverse", "reverse_landing", "--hints", "{input}", *SHORT, "-o", "{out}"],
    ["reverse", "reverse_landing", "--hints", "{input}", "--samples", "2", *SHORT, "-o", "{out}"],
    ["reverse", "reverse_landing", "--hints", "{input}", "--verify", "1", *SHORT, "-o", "{out}"],
    ["reverse", "reverse_landing", "--hints", "{input}", "--then-forward", "0.05", *SHORT]
    + ["-o", "{out}"],
)
TABLE_COMMANDS = (
    ["reverse", "markov_block", "--markov", "{input}", *SHORT, "-o", "{out}"],
    ["reverse", "markov_block", "--markov", "{input}", "--samples", "2", *SHORT, "-o", "{out}"],
    ["markov", "compare", "markov_block", "--table", "{input}", "-n", "2", *SHORT, "-o", "{out}"],
)
SPEC_COMMANDS = {"infer": ["infer", "{input}", "--json", "-o", "{out}"],
                 "inverse": ["inverse", "{input}", "-q", "--mcs", "0", "-o", "{out}"]}  # fmt: skip

#: The damaged files' readers; ``{body}`` is a body of the file.
READERS = (
    ["inspect", "{input}"],
    ["stats", "{input}"],
    ["plot", "{input}", "--body", "block", "--field", "position", "-o", "{out}"],
    ["replay", "{input}", "--html", "{out}"],
)

#: Kinds of case, in the order the runner cycles through them.
KINDS = ("hints", "table", "spec", "hdf5")


def _text_case(index, kind, source: Path, rng, command, output, as_json=False) -> Case:
    text = source.read_text(encoding="utf-8")
    data = json.loads(text) if as_json else parse_yaml(text, str(source))[0]
    mutated = _document(text, data, rng, as_json)
    name = f"fuzz_{index}{source.suffix if as_json else '.yaml'}"
    if kind == "hints":
        name = f"fuzz_{index}.hints.yaml"

    def write(work: Path) -> None:
        (work / name).write_text(mutated, encoding="utf-8", errors="surrogateescape")

    return Case(index, kind, list(command), name, write, output)


def _hdf5_case(index: int, rng: np.random.Generator, originals: dict[str, Path]) -> Case:
    which = sorted(originals)[int(rng.integers(len(originals)))]
    source = originals[which]
    name = f"fuzz_{index}.h5"
    reader = READERS[int(rng.integers(len(READERS)))]
    output = f"out_{index}.png" if reader[0] == "plot" else f"out_{index}.html"
    damage = int(rng.integers(3))
    seed = int(rng.integers(2**31))

    def write(work: Path) -> None:
        dst = work / name
        shutil.copyfile(source, dst)
        damage_hdf5(dst, np.random.default_rng(seed), damage)

    return Case(index, "hdf5", list(reader), name, write, output, [f"{which}, damage {damage}"])


def damage_hdf5(path: Path, rng: np.random.Generator, how: int) -> None:
    """Damage the HDF5 file ``path`` in place: ``how`` 0 flips bytes past the superblock, 1
    truncates, 2 rewrites a dataset's values or an attribute through h5py (NaN, huge, wrong
    type, removed)."""
    if how in (0, 1):
        data = bytearray(path.read_bytes())
        if how == 1:
            path.write_bytes(bytes(data[: int(rng.integers(len(data) // 4, len(data)))]))
            return
        for _ in range(int(rng.integers(1, 8))):
            at = int(rng.integers(96, len(data)))
            data[at] ^= int(rng.integers(1, 256))
        path.write_bytes(bytes(data))
        return
    import h5py

    with h5py.File(path, "r+") as f:
        names: list[str] = []
        f.visit(names.append)
        target = f[names[int(rng.integers(len(names)))]]
        op = int(rng.integers(4))
        if op == 0 and isinstance(target, h5py.Dataset) and target.dtype.kind == "f":
            flat = np.asarray(target[()], dtype=float).reshape(-1)
            if flat.size:
                flat[int(rng.integers(flat.size))] = [np.nan, 1e300, -1e300, 0.0][
                    int(rng.integers(4))
                ]
                target[...] = flat.reshape(target.shape)
        elif op == 1 and target.name != "/":
            del f[target.name]
        elif op == 2 and target.attrs:
            key = sorted(target.attrs)[int(rng.integers(len(target.attrs)))]
            target.attrs[key] = ["garbage", b"\xff\xfe", -1, np.nan][int(rng.integers(4))]
        elif isinstance(target, h5py.Dataset) and target.dtype.kind in "iub":
            flat = np.asarray(target[()]).reshape(-1)
            if flat.size:
                flat[int(rng.integers(flat.size))] = [-1, 10**9, 0][int(rng.integers(3))]
                target[...] = flat.reshape(target.shape)
        else:
            f.attrs["format_version"] = int(rng.integers(-3, 9))


def make_case(seed: int, index: int, originals: dict[str, Path]) -> Case:
    """Case ``index`` of the suite seeded ``seed`` (kinds in turn: :data:`KINDS`)."""
    rng = np.random.default_rng([seed, index])
    kind = KINDS[index % len(KINDS)]
    if kind == "hints":
        command = HINTS_COMMANDS[int(rng.integers(len(HINTS_COMMANDS)))]
        return _text_case(index, kind, HINTS, rng, command, f"out_{index}.h5")
    if kind == "table":
        command = TABLE_COMMANDS[int(rng.integers(len(TABLE_COMMANDS)))]
        output = f"out_{index}" if command[0] == "markov" else f"out_{index}.h5"
        return _text_case(index, kind, TABLE, rng, command, output, as_json=True)
    if kind == "spec":
        which = sorted(SPECS)[int(rng.integers(len(SPECS)))]
        return _text_case(index, kind, SPECS[which], rng, SPEC_COMMANDS[which], f"out_{index}.json")
    return _hdf5_case(index, rng, originals)
