"""Shipped scenes, hints files, specs and data files: where they are, how a name on the command
line finds one, and what each shows.

Folders are looked up in order: ``$WORKBENCH_SCENES`` (a user's own scenes, hints and specs),
the ``scenes/``, ``specs/`` and ``data/`` folders of a source checkout, and
``<prefix>/share/rigid-workbench/{scenes,specs,data}`` where ``pip install .`` puts them.

One rule resolves every name the command line takes (a SCENE, a SPEC, ``--hints``, ``--markov``):
an existing path is used as given; otherwise the name is looked up (next to the scene, for hints)
in those folders, with or without its folder prefix (``scenes/``, ``specs/``, ``data/``) and
suffix. A name that matches nothing raises one line with the nearest names ("did you mean ...?").
"""

from __future__ import annotations

import ast
import difflib
import json
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from workbench.errors import LocatedError, SceneError, SpecError
from workbench.specs import INVALID, SPEC_KINDS, document_kind, peek

__all__ = [
    "scene_dirs",
    "is_scene_file",
    "shipped_scenes",
    "shipped_hints",
    "shipped_specs",
    "shipped_tables",
    "find_scene",
    "find_hints",
    "find_spec",
    "find_data",
    "scene_summary",
    "spec_summary",
    "hints_summary",
    "table_summary",
]


#: The source checkout (``scenes/``, ``specs/`` and ``data/`` sit at its top).
REPOSITORY = Path(__file__).resolve().parents[2]
#: Where ``pip install .`` puts them.
INSTALLED = Path(sys.prefix) / "share" / "rigid-workbench"

#: Suffixes a name may leave out, tried in this order (a scene file wins over a script).
SCENE_SUFFIXES = (".yaml", ".yml", ".py")
#: ``reverse_landing`` and ``reverse_landing.hints`` both find ``reverse_landing.hints.yaml``.
HINTS_SUFFIXES = (".hints.yaml", ".yaml")
SPEC_SUFFIXES = (".yaml", ".yml")
#: At most this many names in a "did you mean" (the message stays one line).
NEAREST = 3
#: Names whose similarity ratio is within this of the nearest one's are offered with it: a
#: ratio step of one character in a 25-character name is 0.04, so this keeps ties only.
EQUALLY_NEAR = 0.02


def _shipped_dirs(kind: str) -> list[Path]:
    """Existing folders named ``kind`` (scenes, specs, data) of the checkout, then installed."""
    return [d for d in (REPOSITORY / kind, INSTALLED / kind) if d.is_dir()]


def _user_dirs() -> list[Path]:
    """``$WORKBENCH_SCENES`` when it names a folder."""
    env = os.environ.get("WORKBENCH_SCENES")
    return [Path(env)] if env and Path(env).is_dir() else []


def scene_dirs() -> list[Path]:
    """Existing folders that hold shipped scenes, in lookup order."""
    return _user_dirs() + _shipped_dirs("scenes")


# --------------------------------------------------------------------------------------------
# Listings
# --------------------------------------------------------------------------------------------


def is_scene_file(path: Path) -> bool:
    """A YAML file with ``bodies`` at the top level (specs beside the scenes have none), or a
    ``.py`` script defining ``build``; a file that is not valid YAML is listed too, so that
    `workbench check` can say what is wrong with it."""
    return document_kind(path) in ("scene", "invalid")


def _scene_files(d: Path) -> list[Path]:
    yaml_files = [f for f in sorted(d.glob("*.y*ml")) if f.suffix in SCENE_SUFFIXES]
    return [f for f in yaml_files if is_scene_file(f)] + sorted(
        f for f in d.glob("*.py") if is_scene_file(f)
    )


def shipped_scenes() -> list[Path]:
    """Scene files (``.yaml`` and ``.py`` scripts with ``build``) of the first scene folder."""
    for d in scene_dirs():
        files = _scene_files(d)
        if files:
            return files
    return []


def _hints_files(d: Path) -> list[Path]:
    return sorted(f for f in d.glob("*.yaml") if document_kind(f) == "hints")


def shipped_hints() -> list[Path]:
    """Hints files (``*.hints.yaml``, or any YAML with a top-level ``hints`` list) of the first
    scene folder that has scenes."""
    for d in scene_dirs():
        if _scene_files(d):
            return _hints_files(d)
    return []


def _spec_files(d: Path) -> list[Path]:
    return [f for f in sorted(d.glob("*.y*ml")) if document_kind(f) in SPEC_KINDS]


def shipped_specs() -> list[tuple[Path, str]]:
    """The shipped inference and inverse specs with their ``kind``, from the first ``specs/``
    folder that has any."""
    for d in _shipped_dirs("specs"):
        files = _spec_files(d)
        if files:
            return [(f, str(document_kind(f))) for f in files]
    return []


def shipped_tables() -> list[Path]:
    """The shipped contact-transition tables (``data/*.json`` written by
    ``workbench markov train``)."""
    for d in _shipped_dirs("data"):
        files = [f for f in sorted(d.glob("*.json")) if "transition table" in _table_format(f)]
        if files:
            return files
    return []


# --------------------------------------------------------------------------------------------
# Names → files
# --------------------------------------------------------------------------------------------


def _resolve(
    name: str | os.PathLike,
    folder: str,
    suffixes: Sequence[str],
    dirs: Sequence[Path],
    listing: Callable[[Path], list[Path]],
    missing: str,
    error: type[LocatedError],
    *,
    other_kinds: Sequence[str] = (),
    suggest_file_names: bool = False,
) -> Path:
    """The one resolution rule (see the module docstring).

    Parameters
    ----------
    name : str or path-like
        As the user wrote it.
    folder : str
        The folder prefix the name may carry (``scenes``, ``specs``, ``data``).
    suffixes : sequence of str
        Suffixes the name may leave out, in the order tried.
    dirs : sequence of Path
        The folders searched, in order.
    listing : callable
        ``listing(dir)``: the files of a folder that are of this kind (for "did you mean").
    missing : str
        What the message says was not found, e.g. "no shipped scene of that name".
    error : LocatedError subclass
        Raised as ``error(name, "", message)`` when nothing matches.
    other_kinds : sequence of str
        Document kinds (:func:`workbench.specs.document_kind`) a name never finds: the hints
        name ``falling_object`` does not find the scene ``falling_object.yaml``. A file of no
        known kind is found, so that its loader says what is wrong with it.
    suggest_file_names : bool
        Suggest ``reverse_landing.hints.yaml`` rather than ``reverse_landing``.

    Returns
    -------
    Path
        The file; or ``name`` unchanged when it is a path into another folder, which its
        loader then reports as missing (the user's own path, not a name to look up).
    """
    p = Path(name)
    try:
        if p.exists():
            return p
    except OSError as exc:  # a name the system cannot take (ENAMETOOLONG)
        raise error(str(name), "", f"not a usable file name ({exc.strerror})") from None
    if p.is_absolute() or p.parent not in (Path("."), Path(folder)):
        return p
    base = p.name
    for d in dirs:
        for candidate in (d / base, *(d / (base + s) for s in suffixes)):
            if candidate.is_file() and document_kind(candidate) not in other_kinds:
                return candidate
    shown: dict[str, str] = {}  # the forms a user may type → the name to suggest
    for d in dirs:
        for f in listing(d):
            stem = _strip(f.name, suffixes)
            for form in (f.name, stem):
                shown.setdefault(form, f.name if suggest_file_names else stem)
    near = _nearest(_strip(base, suffixes), shown)
    where = ", ".join(str(d) for d in dirs) or "no folder found"
    hint = f" (did you mean {near}?)" if near else f"; looked in {where}"
    raise error(str(name), "", f"file not found, and {missing}{hint}")


def _strip(name: str, suffixes: Iterable[str]) -> str:
    """``name`` without the first of ``suffixes`` it ends in."""
    for s in suffixes:
        if name.endswith(s) and len(name) > len(s):
            return name[: -len(s)]
    return name


def _nearest(word: str, shown: dict[str, str]) -> str:
    """``'a'`` (or ``'a' or 'b'`` for names equally near) for the names in ``shown`` closest to
    ``word``, by :mod:`difflib`'s similarity ratio with its default cut-off 0.6; ``""``."""
    ratios: dict[str, float] = {}
    if not shown:  # nothing shipped to compare with (get_close_matches refuses n = 0)
        return ""
    for form in difflib.get_close_matches(word, list(shown), n=len(shown)):
        r = difflib.SequenceMatcher(None, word, form).ratio()
        ratios[shown[form]] = max(r, ratios.get(shown[form], 0.0))
    if not ratios:
        return ""
    best = max(ratios.values())
    near = sorted((-r, n) for n, r in ratios.items() if r >= best - EQUALLY_NEAR)
    names = [f"'{n}'" for _, n in near[:NEAREST]]
    return " or ".join(filter(None, [", ".join(names[:-1]), names[-1]]))


#: What each kind of document is called, and the command that uses a file of it (NAME).
_USES = {
    "scene": ("a scene", "run it with `workbench run NAME`"),
    "hints": ("a hints file", "use it with `workbench reverse SCENE --hints NAME`"),
    "inference": ("an inference spec", "run it with `workbench infer NAME`"),
    "inverse": ("an inverse spec", "run it with `workbench inverse NAME`"),
}


def _scene_path(name: str | os.PathLike) -> Path:
    return _resolve(
        name, "scenes", SCENE_SUFFIXES, scene_dirs(), _scene_files,
        "no shipped scene of that name", SceneError, other_kinds=("hints", *SPEC_KINDS),
    )  # fmt: skip


def _hints_path(name: str | os.PathLike, scene: str | os.PathLike | None = None) -> Path:
    beside = [Path(scene).parent] if scene is not None else []
    dirs: list[Path] = []
    for d in [*beside, *scene_dirs()]:  # once each: the scene may be a shipped one
        if d.is_dir() and all(not d.samefile(e) for e in dirs):
            dirs.append(d)
    return _resolve(
        name, "scenes", HINTS_SUFFIXES, dirs, _hints_files,
        "no hints file of that name next to the scene or shipped", SceneError,
        other_kinds=("scene", *SPEC_KINDS), suggest_file_names=True,
    )  # fmt: skip


def _spec_path(name: str | os.PathLike) -> Path:
    dirs = _user_dirs() + _shipped_dirs("specs")
    return _resolve(
        name, "specs", SPEC_SUFFIXES, dirs, _spec_files, "no shipped spec of that name",
        SpecError, other_kinds=("scene", "hints"),
    )  # fmt: skip


def _of_another_kind(
    name: str | os.PathLike, what: str, exc: LocatedError, others: Sequence[Callable]
) -> LocatedError:
    """When ``name`` names a file of another kind (a spec given as a scene, ...), an error
    saying it is not ``what`` and which command takes it; else ``exc`` ("did you mean")."""
    for find in others:
        try:
            path = find(name)
        except LocatedError:
            continue
        kind = document_kind(path) if path.is_file() else None
        if kind in _USES:
            a_kind, use = _USES[kind]
            use = use.replace("NAME", str(name))
            return type(exc)(str(name), "", f"not {what} but {a_kind}: {use}")
    return exc


def find_scene(name: str | os.PathLike) -> Path:
    """The scene file ``name`` stands for: an existing path as given, else the scene of that
    name (``sliding_block``, ``sliding_block.yaml`` or ``scenes/sliding_block.yaml``) in
    ``$WORKBENCH_SCENES`` or the shipped scenes.

    Raises
    ------
    SceneError
        No such file or shipped scene, with the nearest names (or, for the name of a spec or a
        hints file, the command that takes it).
    """
    try:
        return _scene_path(name)
    except SceneError as exc:
        raise _of_another_kind(name, "a scene", exc, [_spec_path, _hints_path]) from None


def find_hints(name: str | os.PathLike, scene: str | os.PathLike | None = None) -> Path:
    """The hints file ``name`` stands for: an existing path as given, else the hints file of
    that name (``reverse_landing``, ``reverse_landing.hints``, ``reverse_landing.hints.yaml``
    or ``scenes/reverse_landing.hints.yaml``) next to the ``scene`` file, in
    ``$WORKBENCH_SCENES`` or among the shipped scenes.

    Raises
    ------
    SceneError
        Nothing of that name, with the nearest names (or, for the name of a scene or a spec,
        the command that takes it).
    """
    try:
        return _hints_path(name, scene)
    except SceneError as exc:
        raise _of_another_kind(name, "a hints file", exc, [_scene_path, _spec_path]) from None


def find_spec(name: str | os.PathLike) -> Path:
    """The spec ``name`` stands for: an existing path as given, else the spec of that name (with
    or without ``.yaml`` and ``specs/``) in ``$WORKBENCH_SCENES`` (a user's specs may sit beside
    their scenes) or the shipped ``specs/``.

    Raises
    ------
    SpecError
        No such file or shipped spec, with the nearest names (or, for the name of a scene or a
        hints file, the command that takes it).
    """
    try:
        return _spec_path(name)
    except SpecError as exc:
        raise _of_another_kind(name, "a spec", exc, [_scene_path, _hints_path]) from None


def find_data(name: str | os.PathLike, suffix: str = ".json", what: str = "data file") -> Path:
    """The data file ``name`` stands for: an existing path as given, else the shipped data file
    of that name, with or without ``suffix`` and ``data/`` (``markov_block`` finds
    ``data/markov_block.json`` in the repository or ``<prefix>/share/rigid-workbench/data``).

    Raises
    ------
    SpecError
        No such file or shipped data file, with the nearest names (``what`` names the kind,
        e.g. "contact-transition table").
    """
    return _resolve(
        name, "data", (suffix,), _shipped_dirs("data"), lambda d: sorted(d.glob(f"*{suffix}")),
        f"no shipped {what} of that name", SpecError,
    )  # fmt: skip


# --------------------------------------------------------------------------------------------
# One-line descriptions
# --------------------------------------------------------------------------------------------


def scene_summary(path: Path) -> str:
    """The scene's ``description`` (YAML) or its docstring's first paragraph (script), on one
    line."""
    if path.suffix == ".py":
        try:
            doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        except (OSError, UnicodeDecodeError, SyntaxError):
            return "(unreadable script)"
        return " ".join(doc.strip().split("\n\n")[0].split())
    return spec_summary(path)


def spec_summary(path: Path) -> str:
    """The document's ``description`` field (scenes and specs have one)."""
    data = peek(path)
    if data is INVALID:
        return "(invalid YAML)"
    return " ".join(str(data.get("description", "")).split()) if isinstance(data, dict) else ""


def hints_summary(path: Path) -> str:
    """Which bodies the hints file moves and how: ``for reverse_landing: block slide, ...``."""
    data = peek(path)
    items = data.get("hints") if isinstance(data, dict) else None
    if not isinstance(items, list):
        return "(invalid hints file)"
    kinds = ("slide", "bounce", "roll", "free")
    parts = [
        f"{h.get('body', '?')} {next((k for k in kinds if k in h), '?')}"
        for h in items
        if isinstance(h, dict)
    ]
    scene = _strip(path.name, HINTS_SUFFIXES)
    return f"for {scene}: " + ", ".join(parts)


def _table_format(path: Path) -> str:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return ""
    return str(data.get("format", "")) if isinstance(data, dict) else ""


def table_summary(path: Path) -> str:
    """What a contact-transition table is and was trained on: its kind (plain: Twigg & James's
    memoryless table; semi-Markov: the same with dwell-time hazards per state), scene, runs,
    time step, states."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        dt_ms = 1e3 * float(data["dt"])
        kind = (
            "semi-Markov table (transitions + dwell times)"
            if data.get("kind") == "semi-markov"
            else "Markov table (memoryless transitions)"
        )
        return (
            f"{kind}, trained on {data['scene']}: {data['n']} forward runs, dt {dt_ms:.4g} ms, "
            f"{len(data['states'])} contact states"
        )
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError):
        return "(unreadable table)"
