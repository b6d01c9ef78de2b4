"""Global sensitivity of a scene's outputs to its uncertain inputs: Sobol' indices (first-order
S1 and total ST, with bootstrap confidence intervals) or Morris screening (mu*, sigma), via SALib.

The inputs are the scene's random parameters and, for each uncertain body, its mass, centre of
mass and inertia (--group-by input|body|kind). Realization i of an ordinary ensemble takes its
inputs from row i of the design, so the file is the ensemble layout plus /design and
/sensitivity/<output>/ (seeded, resumable, bit-identical for any --workers or --scheduler).
Outputs are those the scene declares under 'outputs:' (--output picks them by name), or an
observer's channel at every recorded time (--observer NAME[.COMPONENT]).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from workbench.cli.common import (
    add_scene_arguments,
    check_output,
    check_sampling_options,
    hold_output_lock,
    interrupted,
    progress_bar,
    task_workers,
    workers_value,
)
from workbench.errors import OptionError
from workbench.scene.catalog import find_scene

__all__ = ["add_sensitivity_parser", "cmd_sensitivity"]

EPILOG = """\
examples:
  workbench sensitivity sliding_block_random.yaml --output stop -n 1024 --seed 1 -o sb.h5
  workbench sensitivity batou_soize_5body.py --set case=4 --observer p_obs_acc.z -n 64 \\
      --group-by kind --workers 2 -o bs.h5
  workbench sensitivity SCENE --method morris -n 20 -o screen.h5
  workbench sensitivity SCENE --output stop -n 1024 --seed 1 -o sb.h5 --resume

then: workbench stats sb.h5 (the indices), workbench plot sb.h5 --sensitivity stop -o s.png
"""


def add_sensitivity_parser(sub) -> None:
    sp = sub.add_parser(
        "sensitivity",
        description=__doc__,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_scene_arguments(sp)
    sp.add_argument(
        "--output",
        dest="outputs",
        action="append",
        default=[],
        metavar="NAME",
        help="an output declared under the scene's 'outputs:' (repeat for more; default: all)",
    )
    sp.add_argument(
        "--observer",
        dest="observers",
        action="append",
        default=[],
        metavar="NAME[.COMPONENT]",
        help="indices at every recorded time of this observer channel (time-resolved; repeat "
        "for more)",
    )
    sp.add_argument(
        "--method",
        choices=("sobol", "morris"),
        default="sobol",
        help="sobol: variance-based S1 and ST (default); morris: elementary-effects screening, "
        "cheaper when runs are expensive",
    )
    sp.add_argument(
        "-n",
        type=int,
        required=True,
        help="Sobol': base sample N, a power of 2 (runs N (G + 2) for G inputs); "
        "Morris: trajectories (runs n (G + 1))",
    )
    sp.add_argument(
        "--group-by",
        choices=("input", "body", "kind"),
        default="input",
        help="input: each parameter and each body's mass/com/inertia (default); body: one "
        "group per body; kind: mass, com, inertia across bodies",
    )
    sp.add_argument("--second-order", action="store_true", help="also S2 (Sobol' only)")
    sp.add_argument("-o", dest="file", help="HDF5 file (default: <scene name>_sensitivity.h5)")
    sp.add_argument("--seed", type=int, help="seed entropy (default: a fresh one, stored)")
    sp.add_argument(
        "--workers",
        type=workers_value,
        metavar="N|auto",
        help="worker processes on this machine, 'auto': one per core (default 1; with "
        "--scheduler local, one Dask worker per core)",
    )
    sp.add_argument(
        "--scheduler",
        metavar="tcp://HOST:PORT|local",
        help="run on a Dask cluster, or 'local': --workers Dask workers on 127.0.0.1, stopped "
        "at the end (docs/ensembles.md)",
    )
    sp.add_argument(
        "--force", action="store_true", help="run realizations above the run-size bounds"
    )
    sp.add_argument(
        "--resume",
        action="store_true",
        help="fill in the realizations missing from an interrupted file (refused unless the "
        "scene, design, -n, --seed and code versions match)",
    )
    sp.set_defaults(func=cmd_sensitivity)


def cmd_sensitivity(args) -> int:
    """``workbench sensitivity`` (the work is :func:`workbench.sensitivity`)."""
    from workbench.tasks.sensitivity import sensitivity

    overrides = check_sampling_options(args, "sample")
    if args.second_order and args.method != "sobol":
        raise OptionError("--second-order: only with --method sobol")
    path = find_scene(args.scene)
    out = Path(args.file or f"{path.stem}_sensitivity.h5")
    if not args.resume:
        check_output(out)
    hold_output_lock(args, out)  # the analysis writes after the ensemble, which takes it too
    try:
        with progress_bar(0, "realizations", delay=0.0, quiet=args.quiet) as advance:
            result = sensitivity(
                path, args.n, output=args.outputs, observer=args.observers,
                method=args.method, group_by=args.group_by, second_order=args.second_order,
                set=dict(overrides), dt=args.dt, duration=args.duration, seed=args.seed,
                workers=task_workers(args), file=out, resume=args.resume, force=args.force,
                progress=advance,
            )  # fmt: skip
    except KeyboardInterrupt:
        return interrupted("sensitivity", out)
    if not args.quiet:
        print("\n".join(result.lines()))
        print(
            f"wrote {out}: {result.ran} realizations run in {result.wall_seconds:.1f} s "
            f"(analysis {result.analysis_seconds:.1f} s); seed {result.entropy}"
        )
    return 0
