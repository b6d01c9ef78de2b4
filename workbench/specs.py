"""One reader for every YAML document of the workbench (scenes, hints, inference and inverse
specs) and one loader of the Python code users name in them.

Reading a document (:func:`read_document`): the file's text, safe YAML with the line of every
field path (:func:`line_index`), errors naming ``file:line``, and the ``kind:`` check: a spec
says ``kind: inference`` or ``kind: inverse``; scenes and hints files have no ``kind``, and
giving a spec where a scene is expected names the command that runs it. Specs then go through
:func:`read_spec`: ``parameters`` with the ``--set`` overrides substituted (``${name}``),
``{select: KEY, from: {...}}`` nodes resolved, and validation against the spec's pydantic schema,
whose errors name the file, the line, the field path and what was expected. The scene schema and
its validation live in :mod:`workbench.scene.model`, the hints' in :mod:`reverse.goals.hints`.

Every YAML text the workbench reads (documents, ``--set`` values, listings) goes through one
bounded reader (:func:`parse_yaml`): at most :data:`MAX_DOCUMENT_BYTES`, collections nested at
most :data:`MAX_DEPTH` deep, and at most :data:`MAX_NODES` nodes with every alias expanded, so
that an alias bomb (``a1: &a1 [*a0, *a0, ...]``) or a 10 000-deep nesting is refused with a
located one-line error instead of exhausting memory or the interpreter's stack.

User code (:func:`load_user_object`): a ``module:name`` or ``file.py:name`` reference of a spec,
or a scene script by path (its ``build``, its ``hints``).

See docs/architecture.md (the spec reader).
"""

from __future__ import annotations

import importlib
import runpy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from workbench.errors import SceneError, SpecError, UserCodeError, WorkbenchError
from workbench.scene.fields import did_you_mean, format_loc
from workbench.scene.parameters import apply_overrides, substitute_parameters

__all__ = [
    "SPEC_KINDS",
    "MAX_DOCUMENT_BYTES",
    "MAX_DEPTH",
    "MAX_NODES",
    "Document",
    "LocatedSpec",
    "SpecSchema",
    "line_index",
    "parse_yaml",
    "parse_override",
    "dump_yaml",
    "read_document",
    "check_kind",
    "document_kind",
    "peek",
    "INVALID",
    "read_spec",
    "schema_error",
    "load_user_object",
]

#: The ``kind:`` of each spec and the command that runs it.
SPEC_KINDS = {"inference": "workbench infer", "inverse": "workbench inverse"}

#: How a document without ``kind:`` is named in messages.
_NAMES = {"scene": "a scene", "hints": "a hints file"}

#: ``__name__`` of a scene script while it runs.
SCRIPT_RUN_NAME = "workbench_scene"

#: What :func:`peek` returns for a file that cannot be read or is not YAML.
INVALID = object()


#: The error classes a reader raises: ``error(source, field, expected, line)``.
ErrorClass = Callable[..., WorkbenchError]


@dataclass(frozen=True)
class Document:
    """A parsed YAML document.

    Attributes
    ----------
    path : Path
        The file it was read from (``source``: as text, for messages).
    text : str
        The file's text.
    data : Any
        The parsed YAML (None for an empty file).
    lines : dict of tuple to int
        1-based line of every field path (:func:`line_index`).
    """

    path: Path
    text: str
    data: Any
    lines: dict = field(repr=False)

    @property
    def source(self) -> str:
        return str(self.path)

    def line_of(self, loc: tuple) -> int | None:
        """The line of field path ``loc``, or of its nearest parent that has one."""
        for k in range(len(loc), -1, -1):
            if loc[:k] in self.lines:
                return self.lines[loc[:k]]
        return None

    def error(self, loc: tuple, expected: str, *, field: str | None = None) -> SpecError:
        """A :class:`SpecError` for field path ``loc`` at its line; ``field`` replaces the path
        shown (``""`` when ``expected`` names the field itself)."""
        shown = format_loc(loc) if field is None else field
        return SpecError(self.source, shown, expected, self.line_of(loc))


class LocatedSpec:
    """Mixin of the loaded specs: :meth:`error` for a field, with its line."""

    source: str
    line_of: Callable[[tuple], int | None] | None

    def error(self, loc: tuple, expected: str) -> SpecError:
        """A :class:`SpecError` for field ``loc`` of this spec."""
        return SpecError(
            self.source, format_loc(loc), expected, self.line_of(loc) if self.line_of else None
        )


class SpecSchema(BaseModel):
    """Base of the spec schemas: unknown fields are errors, values frozen and finite."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


# --------------------------------------------------------------------------------------------
# YAML
# --------------------------------------------------------------------------------------------


#: Largest YAML document read, bytes. The largest shipped document
#: (``specs/falling_object_example3.yaml``) has about 3.1 kB, the largest shipped scene 1.9 kB;
#: 256 KiB is 80 times the former (a scene of 1 600 five-line bodies written out by hand), and
#: PyYAML's pure-Python composer reads such a scene in about 2 s (measured with both cores busy;
#: the worst case, a flat list of :data:`MAX_NODES` scalars, 4 s).
MAX_DOCUMENT_BYTES = 256 * 1024

#: Deepest nesting of nodes in a document (a top-level scalar is level 1). The shipped documents
#: nest at most 7 levels (``scenes/random_box.yaml``, ``specs/du_impact_pybullet.yaml``: measured
#: over scenes/ and specs/); 64 is nine times that, and keeps PyYAML's recursive composer (three
#: Python frames a level) far below the interpreter's limit of 1 000 frames, which a 10 000-deep
#: document reached (``RecursionError``).
MAX_DEPTH = 64

#: Most nodes (scalars and collections) a document may have with every alias expanded: aliases
#: are shared when parsed, but the line index, ``${name}`` substitution and validation visit
#: each use, so a few hundred bytes of nested aliases (the "billion laughs" document) would
#: expand to 10^9 nodes. The largest shipped document has 191 nodes; 100 000 is 500 times that,
#: about what a document of :data:`MAX_DOCUMENT_BYTES` holds without aliases (a flat list of
#: digits, 2 bytes a node: 131 000), and is read in at most 4 s.
MAX_NODES = 100_000


class _BoundExceeded(Exception):
    """A bound of the reader was passed: ``expected`` at ``mark`` (a YAML mark), field ``path``."""

    def __init__(self, expected: str, mark, path: tuple):
        super().__init__(expected)
        self.expected, self.mark, self.path = expected, mark, path


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader that counts, while it composes, the nesting depth and the nodes
    with every alias expanded, and stops at :data:`MAX_DEPTH` / :data:`MAX_NODES`.

    The composer is recursive, one call of :meth:`compose_node` per node, so the depth is
    checked before it recurses; an alias adds the expanded size of its anchor's node, known once
    that node is complete (an alias inside its own anchor, a recursive structure, is refused).
    """

    def __init__(self, text: str):
        super().__init__(text)
        self._depth = 0
        self._nodes = 0
        self._sizes: dict[int, int] = {}  # id(node) -> nodes with aliases expanded
        self._path: list = []

    def _add(self, count: int, mark, what: str) -> None:
        self._nodes += count
        if self._nodes > MAX_NODES:
            raise _BoundExceeded(
                f"{what} the document to more than {MAX_NODES:,} nodes with aliases expanded; "
                f"expected at most {MAX_NODES:,} (nested aliases multiply: an alias bomb?)",
                mark,
                tuple(self._path),
            )

    def compose_node(self, parent, index):
        key = index.value if isinstance(index, yaml.ScalarNode) else index
        self._path.append("?" if key is None and isinstance(parent, yaml.MappingNode) else key)
        try:
            if self.check_event(yaml.AliasEvent):
                mark = self.peek_event().start_mark
                node = super().compose_node(parent, index)
                size = self._sizes.get(id(node))
                if size is None:
                    raise _BoundExceeded(
                        "an alias inside its own anchor (a recursive structure); expected "
                        "aliases of complete nodes only",
                        mark,
                        tuple(self._path[:-1]),
                    )
                self._add(size, mark, "this alias expands")
                return node
            mark = self.peek_event().start_mark
            self._depth += 1
            if self._depth > MAX_DEPTH:
                raise _BoundExceeded(
                    f"nodes nested more than {MAX_DEPTH} levels deep; expected at most "
                    f"{MAX_DEPTH} levels",
                    mark,
                    tuple(self._path[:-1]),
                )
            before = self._nodes
            node = super().compose_node(parent, index)
            self._depth -= 1
            self._add(1, mark, "this node brings")
            self._sizes[id(node)] = self._nodes - before
            return node
        finally:
            self._path.pop()


def _field(path: tuple) -> str:
    """A field path for a message: :func:`format_loc` of the keys (``?`` for complex keys), its
    middle elided when longer than 80 characters (a path 64 levels deep)."""
    text = format_loc(tuple(p if isinstance(p, (str, int)) else "?" for p in path if p is not None))
    return text if len(text) <= 80 else f"{text[:38]}...{text[-38:]}"


def line_index(node) -> dict[tuple, int]:
    """Map every field path of a composed YAML document to its 1-based line."""
    out: dict[tuple, int] = {}

    def walk(n, path: tuple) -> None:
        out[path] = n.start_mark.line + 1
        if isinstance(n, yaml.MappingNode):
            for k, v in n.value:
                key = k.value
                out[path + (key,)] = k.start_mark.line + 1
                walk(v, path + (key,))
                out[path + (key,)] = k.start_mark.line + 1
        elif isinstance(n, yaml.SequenceNode):
            for i, v in enumerate(n.value):
                walk(v, path + (i,))

    if node is not None:
        walk(node, ())
    return out


def _too_large(size: int) -> str:
    return (
        f"a document of {size:,} bytes; expected at most {MAX_DOCUMENT_BYTES:,} bytes "
        f"(the largest shipped document has about 3 kB)"
    )


def parse_yaml(text: str, source: str, error: ErrorClass = SpecError) -> tuple[Any, dict]:
    """Safe-load ``text`` within the reader's bounds; returns the data and its
    :func:`line_index`.

    Raises
    ------
    error
        ``YAML syntax error at line L, column C: problem``; or a bound passed: more than
        :data:`MAX_DOCUMENT_BYTES` bytes, collections nested deeper than :data:`MAX_DEPTH`, more
        than :data:`MAX_NODES` nodes with aliases expanded, an alias inside its own anchor
        (each with the line and field where it happens).
    """
    size = len(text.encode("utf-8", errors="replace"))
    if size > MAX_DOCUMENT_BYTES:
        raise error(source, "", _too_large(size))
    try:
        node, data = _compose(text)
    except _BoundExceeded as exc:
        raise error(source, _field(exc.path), exc.expected, exc.mark.line + 1) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown position"
        problem = (exc.problem or exc.context or "invalid YAML").replace("\n", " ")
        raise error(source, "", f"YAML syntax error at {where}: {problem}") from None
    except yaml.YAMLError as exc:
        raise error(source, "", f"YAML error: {str(exc).splitlines()[0]}") from None
    return data, line_index(node)


def _compose(text: str) -> tuple[Any, Any]:
    """The composed node and the constructed data of ``text`` (None, None when empty).

    Raises :class:`_BoundExceeded` or ``yaml.YAMLError``.
    """
    loader = _BoundedLoader(text)
    try:
        node = loader.get_single_node()
        return node, (loader.construct_document(node) if node is not None else None)
    finally:
        loader.dispose()


def parse_override(text: str) -> tuple[str, Any]:
    """``"name=value"`` -> ``("name", value)`` with the value read as YAML (numbers, lists...)."""
    if "=" not in text:
        raise SceneError("--set", text, "expected name=value")
    name, _, raw = text.partition("=")
    name = name.strip()
    if not raw.strip():
        return name, ""
    shown = text if len(text) < 60 else text[:57] + "..."
    if len(raw.encode("utf-8", errors="replace")) > MAX_DOCUMENT_BYTES:
        raise SceneError("--set", shown, _too_large(len(raw.encode("utf-8", errors="replace"))))
    try:
        return name, _compose(raw)[1]
    except _BoundExceeded as exc:
        raise SceneError("--set", shown, exc.expected) from None
    except yaml.YAMLError:
        return name, raw  # not YAML: the text itself


def dump_yaml(data: Any) -> str:
    """``data`` as YAML text, keys in their order (documents stored beside results)."""
    return yaml.safe_dump(data, sort_keys=False)


def read_document(path: str | Path, kind: str, error: ErrorClass = SpecError) -> Document:
    """Read and parse a YAML document that should be of ``kind`` (:func:`check_kind`).

    Parameters
    ----------
    path : str or Path
    kind : {"scene", "hints", "inference", "inverse"}
    error : exception class
        Raised as ``error(source, field, expected, line)``: :class:`SpecError` for specs,
        :class:`~workbench.errors.SceneError` for scenes and hints.

    Raises
    ------
    error
        A missing or unreadable file, a YAML syntax error (with its line and column), or a
        document of another kind.
    """
    path = Path(path)
    source = str(path)
    if not path.is_file():
        raise error(source, "", "file not found" if not path.exists() else "not a file")
    try:
        size = path.stat().st_size
        if size > MAX_DOCUMENT_BYTES:  # refused before it is read into memory
            raise error(source, "", _too_large(size))
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise error(source, "", f"cannot read the file ({exc})") from None
    data, lines = parse_yaml(text, source, error)
    doc = Document(path, text, data, lines)
    check_kind(doc, kind, error)
    return doc


def check_kind(doc: Document, kind: str, error: ErrorClass = SpecError) -> None:
    """Refuse a document that is not of ``kind``.

    A scene or hints file must not say ``kind: inference`` / ``kind: inverse`` (the message names
    the command that runs it); a scene must not be empty. A spec must be a mapping whose ``kind``
    is ``kind`` (pointing to ``workbench run`` when it looks like a scene).
    """
    data, source = doc.data, doc.source
    if kind in _NAMES:
        if kind == "scene" and data is None:
            raise error(source, "", "the file is empty; expected a scene mapping")
        other = data.get("kind") if isinstance(data, dict) else None
        if other in SPEC_KINDS:
            raise error(
                source,
                "kind",
                f"this is an {other} spec (kind: {other}), not {_NAMES[kind]}: run it with "
                f"`{SPEC_KINDS[other]} {doc.path}`",
            )
        return
    if not isinstance(data, dict):
        raise error(source, "", "expected a mapping of spec fields at the top level")
    if data.get("kind") != kind:
        hint = " (this looks like a scene: use 'workbench run')" if "bodies" in data else ""
        raise error(
            source, "kind", f"expected '{kind}' for an {kind} spec{hint}", doc.line_of(("kind",))
        )


def peek(path: str | Path) -> Any:
    """The parsed YAML of a file, or :data:`INVALID` when it cannot be read or parsed (for
    listings and kind tests, which must not fail)."""
    try:
        path = Path(path)
        if path.stat().st_size > MAX_DOCUMENT_BYTES:
            return INVALID
        return parse_yaml(path.read_text(encoding="utf-8"), str(path))[0]
    except (OSError, UnicodeDecodeError, SpecError):
        return INVALID


def document_kind(path: str | Path) -> str | None:
    """What a file is: ``"inference"`` or ``"inverse"`` (its ``kind:``), ``"scene"`` (YAML with
    ``bodies``, or a ``.py`` script defining ``build``), ``"hints"``, ``"invalid"`` (unreadable or
    not YAML), or None."""
    path = Path(path)
    if path.suffix == ".py":
        try:
            return "scene" if "def build" in path.read_text(encoding="utf-8") else None
        except (OSError, UnicodeDecodeError):
            return "invalid"
    data = peek(path)
    if data is INVALID:
        return "invalid"
    if not isinstance(data, dict):
        return None
    if data.get("kind") in SPEC_KINDS:
        return data["kind"]
    if "bodies" in data:
        return "scene"
    return "hints" if "hints" in data else None


# --------------------------------------------------------------------------------------------
# Specs
# --------------------------------------------------------------------------------------------


def _resolve_select(node: Any, path: tuple, doc: Document) -> Any:
    """Replace every ``{select: key, from: {...}}`` by the chosen entry (recursively)."""
    if isinstance(node, list):
        return [_resolve_select(v, path + (i,), doc) for i, v in enumerate(node)]
    if not isinstance(node, dict):
        return node
    if set(node) == {"select", "from"}:
        key, table = node["select"], node["from"]
        if not isinstance(table, dict):
            loc = path + ("from",)
            raise SpecError(
                doc.source, format_loc(loc), "expected a mapping of choices", doc.line_of(loc)
            )
        for k, v in table.items():
            if k == key or str(k) == str(key):
                return _resolve_select(v, path, doc)
        options = ", ".join(map(str, table))
        hint = did_you_mean(str(key), [str(k) for k in table])
        raise SpecError(
            doc.source,
            format_loc(path),
            f"'{key}' is not one of {options}{hint}",
            doc.line_of(path + ("select",)),
        )
    return {k: _resolve_select(v, path + (k,), doc) for k, v in node.items()}


def schema_error(
    exc: ValidationError, source: str, prefix: tuple, line_of: Callable[[tuple], int | None]
) -> SpecError:
    """The first error of a pydantic validation as a :class:`SpecError` naming the field path
    (below ``prefix``), its line and what was expected."""
    err = exc.errors(include_url=False)[0]
    loc = prefix + tuple(p for p in err["loc"] if not str(p).startswith(("function-", "union")))
    typ, msg = err["type"], err["msg"]
    if typ == "missing":
        msg = "required field is missing"
    elif typ == "extra_forbidden":
        msg = "unknown field"
    else:
        msg = msg.replace("Input should be", "expected").removeprefix("Value error, ")
        got = err.get("input")
        if not isinstance(got, dict):
            text = repr(got)
            msg = f"{msg}, got {text if len(text) < 60 else text[:57] + '...'}"
    return SpecError(source, format_loc(loc), msg, line_of(loc))


def read_spec(
    path: str | Path,
    kind: str,
    schema: type[BaseModel],
    overrides: Mapping[str, Any] | None = None,
) -> tuple[Any, dict, Document]:
    """Read a spec file of ``kind`` (``kind: inference`` / ``kind: inverse``): YAML with line
    numbers, the kind checked, ``parameters`` resolved with ``overrides`` (``--set``) and
    substituted, ``select`` nodes resolved, and the rest validated by the pydantic ``schema``.

    Returns
    -------
    spec : schema
        The validated spec (without ``parameters``).
    parameters : dict
        The parameter values used (declared, with the overrides).
    doc : Document
        The document: its lines (:meth:`Document.line_of`) and errors (:meth:`Document.error`)
        for the checks that follow.

    Raises
    ------
    SpecError
        One line naming the file, the line, the field and what was expected.
    """
    doc = read_document(path, kind, SpecError)
    source, raw = doc.source, doc.data
    declared = raw.get("parameters") or {}
    if not isinstance(declared, dict):
        raise SpecError(source, "parameters", "expected a mapping of name: value")
    try:
        params = apply_overrides(declared, dict(overrides or {}), source)
        body = {k: v for k, v in raw.items() if k != "parameters"}
        body = substitute_parameters(body, params, source, doc.line_of)
    except SceneError as exc:
        raise SpecError(exc.source, exc.field, exc.expected, exc.line) from None
    body = _resolve_select(body, (), doc)
    try:
        return schema.model_validate(body), params, doc
    except ValidationError as exc:
        raise schema_error(exc, source, (), doc.line_of) from None


# --------------------------------------------------------------------------------------------
# User code
# --------------------------------------------------------------------------------------------


def load_user_object(ref: str | Path, *, name: str | None = None, base_dir: Path | None = None):
    """The Python object a document names.

    Parameters
    ----------
    ref : str or Path
        With ``name``: a scene script's path, run as a script (``__name__`` is
        ``"workbench_scene"``). Without: ``"module:attr"`` (imported) or ``"file.py:attr"`` (the
        file, relative to ``base_dir``, run as a script).
    name : str, optional
        The script's function to return (``build``, ``hints``).
    base_dir : Path, optional
        Folder of ``file.py`` references (the spec's).

    Returns
    -------
    object or None
        None when the module or script has no such name.

    Raises
    ------
    UserCodeError
        A malformed reference, a missing file, or the code raised (the message names the
        exception); a :class:`~workbench.errors.SceneError` raised by a scene script passes.
    """
    if name is not None:
        try:
            namespace = runpy.run_path(str(ref), run_name=SCRIPT_RUN_NAME)
        except SceneError:
            raise
        except Exception as exc:  # the user's script failed: name the error
            raise UserCodeError(f"the script raised {type(exc).__name__}: {exc}") from None
        return namespace.get(name)
    ref = str(ref)
    if ":" not in ref:
        raise UserCodeError(f"expected 'module:name' or 'file.py:name', got {ref!r}")
    mod_name, _, attr = ref.rpartition(":")
    file = Path(base_dir or ".") / mod_name
    if mod_name.endswith(".py") and not file.is_file():
        raise UserCodeError(f"{file}: file not found")
    try:
        if mod_name.endswith(".py"):
            return runpy.run_path(str(file), run_name=f"_workbench_spec_{file.stem}").get(attr)
        module = importlib.import_module(mod_name)
    except Exception as exc:
        raise UserCodeError(f"cannot import {mod_name} ({type(exc).__name__}: {exc})") from None
    return getattr(module, attr, None)
