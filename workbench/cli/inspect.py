"""Print what an HDF5 file holds: scene, bodies, observers, parameters, completed realizations and
datasets.
"""

from __future__ import annotations

import argparse
import json

from reverse.runs.audit import summary_lines
from workbench.errors import StoreError
from workbench.store import describe

__all__ = ["add_inspect_parser", "cmd_inspect"]


EPILOG = """\
examples:
  workbench inspect falling.h5
  workbench inspect box.h5 --json
"""


def add_inspect_parser(sub) -> None:
    i = sub.add_parser(
        "inspect",
        description=__doc__,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    i.add_argument("file")
    i.add_argument("--json", action="store_true", help="machine-readable JSON on stdout")
    i.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help=f"every body and parameter (without it, lists longer than {LIST_MOST} are cut and "
        "per-body parameters grouped by quantity)",
    )
    i.set_defaults(func=cmd_inspect)


def cmd_inspect(args) -> int:
    """``workbench inspect`` (the file is read by :func:`workbench.store.describe`)."""
    info = describe(args.file)
    if args.json:
        print(json.dumps(info, indent=2, default=str))
        return 0
    print(_format_description(info, verbose=args.verbose))
    return 0


#: Names a list shows without --verbose.
LIST_MOST = 12


def _format_description(info: dict, verbose: bool = True) -> str:
    """The text ``workbench inspect`` prints for :func:`workbench.store.describe`'s ``info``."""
    lines = []
    attrs = info.get("attrs", {})
    lines.append(
        f"{info.get('path', '')}  ({info.get('kind', attrs.get('kind', ''))}, format "
        f"{attrs.get('format_version', '?')}, workbench {attrs.get('workbench_version', '?')})"
    )
    for key in ("scene_first_line", "created", "seed_entropy"):
        if info.get(key) or attrs.get(key):
            lines.append(f"  {key.replace('_', ' ')}: {info.get(key) or attrs.get(key)}")
    lines.append(
        f"  realizations: {info.get('n_completed', '?')} of {info.get('n_realizations', '?')}"
        " completed"
    )
    failed = info.get("failed") or []
    n_done = info.get("n_completed") or 0
    if info.get("n_realizations") == 1 and n_done == 1:
        status = failed[0]["status"] if failed else "ok"
        lines.append(f"  status: {status}" + (f" ({failed[0]['message']})" if failed else ""))
    elif failed:
        counts: dict[str, int] = {}
        for f in failed:
            counts[f["status"]] = counts.get(f["status"], 0) + 1
        text = ", ".join(f"{n} {status}" for status, n in counts.items())
        lines.append(f"  status: {n_done - len(failed)} ok, {text}; first: {failed[0]}")
    if attrs.get("time_reversed"):
        lines.append("  time reversed: a reverse run (its records go forward in time to the scene)")
    if attrs.get("audit"):  # reverse runs: the physical audit (reverse/runs/audit.py)
        try:
            lines += ["  " + line for line in summary_lines(json.loads(attrs["audit"]))]
        except (ValueError, KeyError, TypeError, AttributeError, IndexError):
            raise StoreError(
                f"{info.get('path', '')}: attribute audit is not a reverse run's audit; the file "
                "is damaged"
            ) from None
    if "confirmed_share" in attrs:  # reverse runs: reverse/runs/confirm.py
        share = 100 * float(attrs["confirmed_share"])
        lines.append(
            f"  confirmation: PyBullet from the earliest state puts {share:.0f}% of the moving "
            "bodies within 1 cm of their place (/reverse/confirmation)"
        )
    t = info.get("time", {})
    if t:
        lines.append(f"  time: {t.get('nt')} records from {t.get('start')} to {t.get('stop')} s")
    links = info.get("links") or {}
    bodies = [name for name in info.get("bodies", []) if name not in links]
    lines.append(f"  bodies ({len(bodies)}): {_names(bodies, verbose)}")
    if links:  # the links of URDF bodies: rows of their own after the bodies
        lines.append(f"  links ({len(links)}, rows after the bodies; parent, joint, type):")
        for name, d in links.items():
            lines.append(f"    {name}: {d['parent']}, {d['joint']}, {d['joint_type']}")
    joints = info.get("joints") or {}
    if joints:
        lines.append(f"  joints ({len(joints)}, in /joints/position and velocity):")
        for name, d in joints.items():
            lines.append(f"    {name}: moves {d['link']}, {d['type']}, {d['unit']}")
    for section in ("observers", "params", "datasets"):
        items = info.get(section) or {}
        if section == "params" and not verbose and len(items) > LIST_MOST:
            items = _grouped_params(items)
        if items:
            lines.append(f"  {section}:")
            for name, d in items.items():
                lines.append(f"    {name}: {_short(d)}")
    if "file_size" in info:
        lines.append(f"  file size: {info['file_size']:,} bytes")
    return "\n".join(lines)


def _short(d) -> str:
    if isinstance(d, dict):
        return ", ".join(f"{k}={v}" for k, v in d.items())
    return str(d)


def _names(names: list[str], verbose: bool) -> str:
    """The names, or the first :data:`LIST_MOST` and how many more (``-v`` lists all)."""
    if verbose or len(names) <= LIST_MOST:
        return ", ".join(names)
    return ", ".join(names[:LIST_MOST]) + f", … {len(names) - LIST_MOST} more (-v lists all)"


def _grouped_params(items: dict) -> dict:
    """Per-body parameters ``<body>/<quantity>`` grouped by quantity: ``*/mass`` with the count
    of bodies and the first one's description (``-v`` lists each)."""
    groups: dict[str, list] = {}
    for name, d in items.items():
        body, _, quantity = name.rpartition("/")
        groups.setdefault(f"*/{quantity}" if body else name, []).append((body, d))
    out = {}
    for key, members in groups.items():
        d = members[0][1]
        if len(members) > 1:
            d = {"bodies": len(members), **(d if isinstance(d, dict) else {"value": d})}
        out[key] = d
    return out
