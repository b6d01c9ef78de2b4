"""Plot one observer channel (each component against time), or a tracked body's or link's state
(``--body``, e.g. ``robot/gripper`` for a link of a URDF body), or a joint's (``--joint``)."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from workbench.cli.common import hold_output_lock
from workbench.ensemble import report
from workbench.errors import StoreError
from workbench.figures.trajectories import plot_observer
from workbench.scene.model import OBSERVER_QUANTITIES
from workbench.sim.state import JOINT_CHANNELS, ROW_CHANNELS, Trajectory, channel
from workbench.store import TrajectoryStore, read_trajectory

__all__ = ["add_plot_parser", "cmd_plot"]

#: Units of the per-record diagnostics (``kinetic_energy``, ``contact_count``): each is named
#: after the observer quantity it sums over the scene, whose unit the scene model declares.
_DIAGNOSTIC_UNITS = {name: row[1] for name, row in OBSERVER_QUANTITIES.items()}


EPILOG = """\
examples:
  workbench plot falling.h5 --observer height -o height.png
  workbench plot falling.h5 --observer kinetic_energy
  workbench plot box.h5 --observer com --band 0.9        ensemble: mean, nominal, 90% region
  workbench plot box.h5 --observer com --convergence     ensemble: mean-square convergence
  workbench plot box.h5 --observer com --realization 3   ensemble: one realization
  workbench plot box.h5 --param box/mass                 ensemble: PDF of a sampled parameter
  workbench plot box.h5 --param box/com                  ensemble: scatter of a 3-vector
  workbench plot sb.h5 --sensitivity stop                Sobol' indices with intervals
  workbench plot bs.h5 --sensitivity p_obs_acc.z         indices against time
  workbench plot r2d2.h5 --body robot/left_gripper        a link's centre of mass
  workbench plot arm.h5 --body arm/lbr_iiwa_link_7 --band 0.9   ensemble: band of a link
  workbench plot arm.h5 --joint arm/lbr_iiwa_joint_2 --field velocity
"""


def add_plot_parser(sub) -> None:
    pl = sub.add_parser(
        "plot",
        description=__doc__,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    pl.add_argument("file")
    what = pl.add_mutually_exclusive_group(required=True)
    what.add_argument("--observer", help="observer or diagnostic name")
    what.add_argument(
        "--body",
        metavar="ROW",
        help="a tracked body or link ('<body>/<link>' for a link of a URDF body): its --field",
    )
    what.add_argument(
        "--joint", metavar="BODY/JOINT", help="a moving joint of a URDF body: its --field"
    )
    what.add_argument(
        "--param",
        metavar="BODY/QUANTITY",
        help="ensembles: PDF of a sampled parameter (e.g. rb5/mass, rb5/G for "
        "tr(G)) or scatter of a 3-vector (rb5/com)",
    )
    what.add_argument(
        "--sensitivity",
        metavar="OUTPUT",
        help="files of `workbench sensitivity`: the output's indices (bars with intervals, or "
        "curves against time for an observer channel)",
    )
    pl.add_argument(
        "--band",
        type=float,
        default=None,
        metavar="P_C",
        help="ensembles: confidence region at this probability (default 0.9) with "
        "the mean and nominal responses",
    )
    pl.add_argument(
        "--convergence",
        action="store_true",
        help="ensembles: mean-square convergence of the observer instead",
    )
    pl.add_argument(
        "--field",
        default="position",
        help=f"with --body: {', '.join(ROW_CHANNELS)}; with --joint: {', '.join(JOINT_CHANNELS)} "
        "(default position)",
    )
    pl.add_argument("--realization", type=int, default=0, help="realization index (default 0)")
    pl.add_argument("-o", "--output", help="image to write (default: <file>_<observer>.png)")
    pl.set_defaults(func=cmd_plot)


def cmd_plot(args) -> int:
    """``workbench plot`` (figures by :mod:`workbench.figures.trajectories`; those of ensembles
    driven by :mod:`workbench.ensemble.report`)."""
    with TrajectoryStore.open(args.file) as store:
        is_ensemble = store.attrs.get("kind") == "ensemble"
    stem = Path(args.file).with_suffix("")
    if args.sensitivity is not None:
        out = Path(args.output or f"{stem}_{args.sensitivity}_sensitivity.png")
        hold_output_lock(args, out)
        print(f"wrote {report.plot_sensitivity(args.file, args.sensitivity, out)}")
        return 0
    if args.body is not None or args.joint is not None:
        return _plot_channel(args, is_ensemble, stem)
    if args.param is not None or (is_ensemble and args.realization == 0 and args.band != 0):
        if not is_ensemble:
            raise StoreError(f"{args.file}: --param/--band/--convergence need an ensemble file")
        if args.param is not None:
            out = Path(args.output or f"{stem}_{args.param.replace('/', '_')}.png")
            hold_output_lock(args, out)
            written = report.plot_parameter(args.file, args.param, out)
        elif args.convergence:
            out = Path(args.output or f"{stem}_{args.observer}_convergence.png")
            hold_output_lock(args, out)
            written = report.plot_ensemble_convergence(args.file, args.observer, out)
        else:
            p_c = 0.9 if args.band is None else args.band
            if not 0 < p_c < 1:
                raise StoreError(f"--band: expected a probability in (0, 1), got {p_c}")
            out = Path(args.output or f"{stem}_{args.observer}_band.png")
            hold_output_lock(args, out)
            written = report.plot_ensemble_observer(args.file, args.observer, out, p_c)
        print(f"wrote {written}")
        return 0
    traj = read_trajectory(args.file, args.realization)
    out = Path(args.output or f"{stem}_{args.observer}.png")
    hold_output_lock(args, out)
    try:
        written = plot_observer(traj, args.observer, out, diagnostic_units=_DIAGNOSTIC_UNITS)
    except KeyError as exc:
        raise StoreError(f"{args.file}: --observer: {exc.args[0]}") from None
    print(f"wrote {written}")
    return 0


def _plot_channel(args, is_ensemble: bool, stem: Path) -> int:
    """``--body`` or ``--joint``: one run's channel, or an ensemble's band (mean, nominal and
    the confidence region at ``--band``, as for observers) unless ``--realization`` is given."""
    from workbench.ensemble.statistics import confidence_band, mean_response
    from workbench.figures.trajectories import plot_band, plot_observer

    what = args.body if args.body is not None else args.joint
    label = f"{what}.{args.field}"
    out = Path(args.output or f"{stem}_{what.replace('/', '_')}_{args.field}.png")
    hold_output_lock(args, out)
    key = {"body": args.body} if args.body is not None else {"joint": args.joint}

    def of(traj: Trajectory) -> tuple:
        try:
            return channel(traj, field=args.field, **key)
        except KeyError as exc:
            flag = "--body" if args.body is not None else "--joint"
            raise StoreError(f"{args.file}: {flag}/--field: {exc.args[0]}") from None

    if not is_ensemble or args.realization != 0 or args.band == 0:
        traj = read_trajectory(args.file, args.realization)
        values, info = of(traj)
        traj.observers, traj.observer_info = {label: values}, {label: info}
        print(f"wrote {plot_observer(traj, label, out)}")
        return 0
    p_c = 0.9 if args.band is None else args.band
    if not 0 < p_c < 1:
        raise StoreError(f"--band: expected a probability in (0, 1), got {p_c}")
    with TrajectoryStore.open(args.file) as store:
        template = store.read(int(store.completed.argmax()))
        _, info = of(template)
        if args.body is not None:
            Y = store.read_array(f"states/{args.field}")[:, :, template.body_index(args.body)]
        else:
            k = template.joint_index(args.joint)
            Y = store.read_array(f"joints/{args.field}")[:, :, k : k + 1]
        nominal = store.read_nominal()
        time = store.schema.time
    try:
        mean, (lo, hi) = mean_response(Y), confidence_band(Y, p_c)
    except ValueError as exc:
        raise StoreError(f"{args.file}: {what}: {exc}") from None
    nom = of(nominal)[0] if nominal is not None else None
    n_ok = int(np.sum(np.all(np.isfinite(Y.reshape(Y.shape[0], -1)), axis=1)))
    title = f"{what}: {info['quantity']} — {n_ok} realizations, P_c = {p_c:g}"
    print(f"wrote {plot_band(time, nom, mean, lo, hi, info, out, p_c=p_c, title=title)}")
    return 0
