"""Document parameters: ``${name}`` substitution and ``--set name=value`` overrides.

Scenes and specs both declare ``parameters:`` at the top and refer to them as ``${name}`` in any
string below; the command line replaces declared values with ``--set``. See
``docs/architecture.md`` (the scene wing).
"""

from __future__ import annotations

import re
from typing import Any

from workbench.errors import SceneError
from workbench.scene.fields import did_you_mean, format_loc

__all__ = ["substitute_parameters", "apply_overrides", "referenced_parameters"]

_PARAM_REF = re.compile(r"\$\{([^}]*)\}")


def _unknown(name: str, params: dict[str, Any], shown: str) -> str:
    """The message for a parameter ``name`` that is not declared (``shown`` as the user wrote)."""
    return (
        f"unknown parameter '{shown}'{did_you_mean(name, params)}; declared parameters: "
        f"{', '.join(params) or '(none)'}"
    )


#: Most characters a document's strings may hold once ``${name}`` references are spliced in, and
#: most nodes its values may hold once whole-value references are replaced: the YAML reader's own
#: bounds on a document (``MAX_DOCUMENT_BYTES``, ``MAX_NODES`` in ``workbench/specs.py``, which
#: this module may not import). References act like YAML aliases, so a small document could
#: otherwise splice itself into gigabytes ("${p}${p}..." with a long ``p``).
MAX_EXPANDED_CHARS = 256 * 1024
MAX_EXPANDED_NODES = 100_000


def _nodes(value: Any) -> int:
    """Nodes of a parsed value: 1 for a scalar, 1 + those of the items of a list or mapping."""
    if isinstance(value, dict):
        return 1 + sum(_nodes(v) for v in value.values())
    if isinstance(value, list):
        return 1 + sum(_nodes(v) for v in value)
    return 1


def substitute_parameters(
    data: Any, params: dict[str, Any], source: str = "<scene>", line_of=None
) -> Any:
    """Replace ``${name}`` in every string of ``data`` by the parameter's value.

    A string that is exactly ``${name}`` takes the value itself (number, list, ...); a longer
    string gets the value's text spliced in. Unknown names raise :class:`SceneError`.

    Parameters
    ----------
    data : dict, list or scalar
        Parsed document (not modified).
    params : dict
        Parameter values by name.
    source : str
        Where ``data`` came from, for error messages.
    line_of : callable, optional
        ``line_of(path_tuple) -> int | None`` giving the source line of a field.
    """

    size = {"chars": 0, "nodes": 0}
    node_counts = {name: _nodes(value) for name, value in params.items()}

    def spend(path: tuple, chars: int = 0, nodes: int = 0) -> None:
        size["chars"] += chars
        size["nodes"] += nodes
        if size["chars"] > MAX_EXPANDED_CHARS or size["nodes"] > MAX_EXPANDED_NODES:
            raise SceneError(
                source,
                format_loc(path),
                f"with its ${{...}} references replaced the document would pass "
                f"{MAX_EXPANDED_CHARS:,} characters or {MAX_EXPANDED_NODES:,} values; expected "
                "fewer (a parameter spliced into itself many times?)",
                line_of(path) if line_of else None,
            )

    def walk(node: Any, path: tuple) -> Any:
        if isinstance(node, dict):
            return {k: walk(v, path + (k,)) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v, path + (i,)) for i, v in enumerate(node)]
        if isinstance(node, str) and "${" in node:
            for r in _PARAM_REF.findall(node):
                if r not in params:
                    raise SceneError(
                        source,
                        format_loc(path),
                        _unknown(r, params, f"${{{r}}}"),
                        line_of(path) if line_of else None,
                    )
            whole = _PARAM_REF.fullmatch(node.strip())
            if whole:
                spend(path, nodes=node_counts[whole.group(1)])
                return params[whole.group(1)]
            refs = _PARAM_REF.findall(node)
            spend(path, chars=len(node) + sum(len(str(params[r])) for r in refs))
            return _PARAM_REF.sub(lambda m: str(params[m.group(1)]), node)
        return node

    return walk(data, ())


def referenced_parameters(value: Any) -> list[str]:
    """The parameter names ``value`` refers to as ``${name}``, in order (none unless a string)."""
    return _PARAM_REF.findall(value) if isinstance(value, str) else []


def apply_overrides(
    declared: dict[str, Any], overrides: dict[str, Any] | None, source: str
) -> dict[str, Any]:
    """Declared parameters updated by ``overrides``; unknown names raise :class:`SceneError`."""
    params = dict(declared)
    for k, v in (overrides or {}).items():
        if k not in params:
            raise SceneError(source, f"--set {k}", _unknown(k, params, k))
        params[k] = v
    return params
