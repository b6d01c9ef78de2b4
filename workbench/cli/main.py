"""The ``workbench`` command line: thin wrappers around the library, one subcommand each.

Exit status: 0 success; 2 bad input (one line on stderr naming the file, field and what was
expected); 1 a run that failed part-way (the records before the failure are kept in the file
and marked); 130 interrupted.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["main", "build_parser"]

EPILOG = """\
examples:
  workbench scenes
  workbench check my_scene.yaml --set c=0.2
  workbench run falling_object -o falling.h5 --set c=0.2
  workbench ensemble random_box -n 200 -o box.h5 --workers 2
  workbench stats box.h5
  workbench plot box.h5 --observer com --band 0.9
  workbench inspect falling.h5
  workbench plot falling.h5 --observer height -o height.png
  workbench replay falling.h5 --reverse --speed 0.5
  workbench replay falling.h5 --frames frames/
  workbench reverse reverse_landing --hints scenes/reverse_landing.hints.yaml \\
      --duration 0.5 -o landing.h5
  workbench validate --model model.h5 --experiments run1.h5 run2.h5 --observer tip \\
      --component x --epsilon 0.05 --plot validation.png

exit status: 0 ok, 1 run failed part-way (partial results kept), 2 bad input
"""


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="workbench",
        description="Rigid Workbench: run rigid-body scenes in PyBullet, store trajectories in "
        "HDF5, inspect, plot and replay them.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--version", action="store_true", help="print the version and exit")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")

    r = sub.add_parser(
        "run",
        help="run a scene forward and store the trajectory",
        description="Run SCENE (a .yaml file, a .py scene script, or the name of a "
        "shipped scene) forward in PyBullet and write the trajectory to HDF5.",
    )
    _add_scene_arguments(r)
    r.add_argument("-o", "--output", help="HDF5 file to write (default: <scene name>.h5)")
    r.set_defaults(func=cmd_run)

    ck = sub.add_parser(
        "check",
        help="validate a scene without running it",
        description="Load and validate SCENE (with --set overrides) and print what it holds; "
        "exit 2 with one line naming the field if it is invalid.",
    )
    _add_scene_arguments(ck, settings=False)
    ck.set_defaults(func=cmd_check)

    en = sub.add_parser(
        "ensemble",
        help="run a Monte Carlo ensemble of a random scene into HDF5",
        description="Run N realizations of SCENE (random masses, centres of mass, inertias and "
        "parameters as the scene declares) and store them, with the nominal run, in one HDF5 "
        "file. Realization i uses SeedSequence(seed, spawn_key=(i,)): the file is bit-identical "
        "whatever --workers or --scheduler.",
    )
    _add_scene_arguments(en)
    en.add_argument("-n", type=int, required=True, help="number of realizations")
    en.add_argument("-o", "--output", help="HDF5 file (default: <scene name>_ensemble.h5)")
    en.add_argument(
        "--seed", type=int, help="seed entropy (default: a fresh one, stored in the file)"
    )
    en.add_argument(
        "--workers",
        type=int,
        default=1,
        help="worker processes on this machine (default 1: in this process)",
    )
    en.add_argument(
        "--scheduler",
        metavar="tcp://HOST:PORT",
        help="run on a Dask cluster (needs the 'dask' extra; start workers with --nthreads 1)",
    )
    en.add_argument(
        "--resume",
        action="store_true",
        help="fill in the realizations missing from an interrupted OUTPUT",
    )
    en.set_defaults(func=cmd_ensemble)

    stt = sub.add_parser(
        "stats",
        help="statistics of an ensemble file",
        description="Summarise an ensemble: realizations and failures, sampled parameters "
        "(mean, std, cv), and per observer the peaks of the nominal and mean responses, the "
        "widest confidence band and the mean-square convergence.",
    )
    stt.add_argument("file")
    stt.add_argument(
        "--band",
        type=float,
        default=0.9,
        metavar="P_C",
        help="probability level of the confidence region (default 0.9)",
    )
    stt.add_argument("--json", action="store_true", help="machine-readable JSON on stdout")
    stt.set_defaults(func=cmd_stats)

    i = sub.add_parser(
        "inspect",
        help="summarise an HDF5 result file",
        description="Print what an HDF5 file holds: scene, bodies, observers, "
        "parameters, completed realizations and datasets.",
    )
    i.add_argument("file")
    i.add_argument("--json", action="store_true", help="machine-readable JSON on stdout")
    i.set_defaults(func=cmd_inspect)

    pl = sub.add_parser(
        "plot",
        help="plot an observer of a stored run",
        description="Plot one observer channel (each component against time).",
    )
    pl.add_argument("file")
    what = pl.add_mutually_exclusive_group(required=True)
    what.add_argument("--observer", help="observer or diagnostic name")
    what.add_argument(
        "--param",
        metavar="BODY/QUANTITY",
        help="ensembles: PDF of a sampled parameter (e.g. rb5/mass, rb5/G for "
        "tr(G)) or scatter of a 3-vector (rb5/com)",
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
    pl.add_argument("--realization", type=int, default=0, help="realization index (default 0)")
    pl.add_argument("-o", "--output", help="image to write (default: <file>_<observer>.png)")
    pl.set_defaults(func=cmd_plot)

    va = sub.add_parser(
        "validate",
        help="time-domain validation metrics of a model ensemble against experiments",
        description="Compare a model ensemble (MODEL.h5 from `workbench ensemble`) with "
        "experiments (stores such as `workbench run` files, or a CSV of time series: first column "
        "time in s, one column per experiment) on one observer component, with the "
        "instantaneous, first-passage and accumulated reliability metrics of Ao, Hu & "
        "Mahadevan (2017). The model is streamed in blocks of --chunk-size realizations.",
    )
    va.add_argument("--model", required=True, metavar="MODEL.h5", help="model ensemble store")
    va.add_argument(
        "--experiments",
        required=True,
        nargs="+",
        metavar="EXP",
        help="experiment stores (every completed realization is one experiment) or CSV files",
    )
    va.add_argument("--observer", required=True, help="observer name")
    va.add_argument(
        "--component",
        help="component index or label (e.g. 0 or x); needed when the observer has several",
    )
    thr = va.add_mutually_exclusive_group(required=True)
    thr.add_argument(
        "--lambda",
        dest="lam",
        type=float,
        metavar="LAMBDA",
        help="relative threshold: |model - experiment| < LAMBDA |experiment| (e.g. 0.08)",
    )
    thr.add_argument(
        "--epsilon",
        type=float,
        help="absolute threshold in the observer's unit: |model - experiment| < EPSILON",
    )
    va.add_argument(
        "--metric",
        choices=("instantaneous", "first-passage", "accumulated", "all"),
        default="all",
        help="which metric (default all)",
    )
    va.add_argument(
        "--interpolate",
        action="store_true",
        help="interpolate the model onto the experiments' instants when the time grids differ",
    )
    va.add_argument(
        "--chunk-size",
        type=int,
        default=4096,
        help="model realizations read and processed at once (memory bound; default 4096)",
    )
    va.add_argument("--json", action="store_true", help="machine-readable JSON on stdout")
    va.add_argument("-o", "--output", metavar="OUT.json", help="write the full result as JSON")
    va.add_argument("--plot", metavar="FIG.png", help="write a figure of the metrics")
    va.set_defaults(func=cmd_validate)

    inf = sub.add_parser(
        "infer",
        help="Bayesian parameter estimation from an inference spec",
        description="Infer model parameters from data as SPEC (a YAML file with kind: inference) "
        "describes: the most probable value (MAP), the Laplace (Gaussian) posterior with standard "
        "deviations and correlations, and the exact posterior on a grid (1-2 parameters) or by "
        "MCMC (emcee). Exit status 1 when the MAP did not converge, the Hessian is singular or "
        "MCMC did not converge (the results are still printed).",
    )
    inf.add_argument("spec", help="inference spec (YAML with kind: inference)")
    inf.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a spec parameter (repeatable), e.g. case=3",
    )
    inf.add_argument(
        "--exact",
        choices=("auto", "grid", "mcmc", "none"),
        help="exact posterior: grid (1-2 parameters), mcmc (emcee) or none (default: the "
        "spec's; auto = grid for 1-2 parameters of a function model)",
    )
    inf.add_argument("--seed", type=int, help="MCMC seed (default: the spec's exact.seed)")
    inf.add_argument("--json", action="store_true", help="machine-readable JSON on stdout")
    inf.add_argument("-o", "--output", metavar="OUT.json", help="also write the JSON to a file")
    inf.add_argument("--plot", metavar="DIR", help="write the fit and posterior figures to DIR")
    inf.set_defaults(func=cmd_infer)

    de = sub.add_parser(
        "design",
        help="optimal measurement times from an inference spec",
        description="Optimal experimental design: the measurement times in the spec's design "
        "interval that minimize the information entropy of the asymptotic posterior, with model "
        "errors correlated in time (exp(-|t_i - t_j|/lambda)), for each ratio eta = "
        "sigma2/sigma1 and number of measurements N. Exit status 1 when a global optimization "
        "was not confirmed by two restarts.",
    )
    de.add_argument("spec", help="inference spec with a design section")
    de.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a spec parameter (repeatable)",
    )
    de.add_argument(
        "--eta",
        type=float,
        nargs="+",
        metavar="ETA",
        help="ratios sigma2/sigma1 of model to measurement error (default: the spec's)",
    )
    de.add_argument(
        "--n", metavar="N", help="numbers of measurements: 3, 1..10 or 1,2,5 (default: the spec's)"
    )
    de.add_argument(
        "--param",
        action="append",
        metavar="NAME",
        help="design for these parameters only (repeatable; default: the spec's)",
    )
    de.add_argument(
        "--lambda", dest="lam", type=float, metavar="S", help="model-error correlation length, s"
    )
    de.add_argument("--seed", type=int, help="optimizer seed (default: the spec's design.seed)")
    de.add_argument("--json", action="store_true", help="machine-readable JSON on stdout")
    de.add_argument("-o", "--output", metavar="OUT.json", help="also write the JSON to a file")
    de.add_argument("--plot", metavar="DIR", help="write the design figures to DIR")
    de.set_defaults(func=cmd_design)

    sc = sub.add_parser(
        "scenes",
        help="list the shipped scenes",
        description="List the shipped scenes with a one-line description.",
    )
    sc.set_defaults(func=cmd_scenes)

    rp = sub.add_parser(
        "replay",
        help="replay a stored run in the PyBullet viewer",
        description="Play a stored trajectory in the PyBullet viewer (needs a "
        "display), or with --frames render PNG frames headless instead.",
    )
    rp.add_argument("file")
    rp.add_argument("--realization", type=int, default=0, help="realization index (default 0)")
    rp.add_argument("--reverse", action="store_true", help="play time backwards")
    rp.add_argument("--speed", type=float, default=1.0, help="playback speed factor (default 1)")
    rp.add_argument("--loop", action="store_true", help="repeat until the window is closed")
    rp.add_argument(
        "--no-hold",
        dest="hold",
        action="store_false",
        help="close the window when playback ends (default: keep it until you close it)",
    )
    rp.add_argument("--frames", metavar="DIR", help="write PNG frames to DIR (headless)")
    rp.add_argument("--fps", type=float, default=30.0, help="frame rate for --frames (default 30)")
    rp.add_argument("--size", default="640x480", help="frame size WxH for --frames")
    rp.set_defaults(func=cmd_replay)

    from workbench.cli.reverse import add_reverse_parser  # the reverse stepper owns its command

    add_reverse_parser(sub)
    from workbench.cli.markov import add_markov_parser  # the Markov model owns its command

    add_markov_parser(sub)
    from workbench.cli.inverse import add_inverse_parser

    add_inverse_parser(sub)
    return ap


def _add_scene_arguments(parser: argparse.ArgumentParser, settings: bool = True) -> None:
    """SCENE and --set (and --dt, --duration, -q for commands that run it)."""
    parser.add_argument("scene", help="scene file, scene script, or shipped scene name")
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a scene parameter (repeatable); values are read as YAML",
    )
    if settings:
        parser.add_argument("--dt", type=float, help="time step, s (overrides the scene)")
        parser.add_argument(
            "--duration", type=float, help="simulated time, s (overrides the scene)"
        )
        parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar or summary")


def main(argv: list[str] | None = None) -> int:
    ap = build_parser()
    args = ap.parse_args(argv)
    if args.version:
        from workbench import __version__

        print(__version__)
        return 0
    if args.command is None:
        ap.print_help()
        return 2
    from workbench.errors import WorkbenchError

    try:
        return int(args.func(args) or 0)
    except WorkbenchError as exc:
        print(f"workbench {args.command}: {_one_line(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"workbench {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `workbench stats f.h5 | head`: the reader left
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


# ---------------------------------------------------------------------------------------- run
def cmd_run(args) -> int:
    import time

    from workbench.scene.catalog import find_scene
    from workbench.errors import SceneError
    from workbench.sim.forward import run_scene
    from workbench.scene.loader import load_scene, parse_override, scene_to_json
    from workbench.store import write_trajectory

    overrides = dict(parse_override(s) for s in args.overrides)
    path = find_scene(args.scene)
    scene = load_scene(path, overrides)
    for name in ("dt", "duration"):
        value = getattr(args, name)
        if value is not None and not value > 0:
            raise SceneError(f"--{name}", "", f"expected a positive number of seconds, got {value}")
    scene = scene.with_settings(dt=args.dt, duration=args.duration)
    out = Path(args.output or f"{path.stem}.h5")
    bar = None if args.quiet else _progress_bar(scene.settings.n_steps, "steps")
    t0 = time.perf_counter()
    try:
        traj = run_scene(scene, progress=None if bar is None else bar.advance)
    finally:
        if bar is not None:
            bar.close()
    wall = time.perf_counter() - t0
    write_trajectory(out, traj, scene_text=scene.source_text, scene_json=scene_to_json(scene))
    if traj.status != "ok":
        print(
            f"workbench run: {path}: {traj.message}; wrote {out} with {traj.n_times} records "
            f"(marked '{traj.status}')",
            file=sys.stderr,
        )
        return 1
    if not args.quiet:
        bodies = f"{traj.n_bodies} bod{'y' if traj.n_bodies == 1 else 'ies'}"
        print(
            f"wrote {out}: {traj.n_times} records of {bodies}, "
            f"{scene.settings.duration:g} s simulated in {wall:.2f} s "
            f"({scene.settings.n_steps / max(wall, 1e-9):,.0f} steps/s)"
        )
    return 0


class _Bar:
    """tqdm bar on stderr: done/total, rate and ETA; by default it appears only for work lasting
    more than a couple of seconds."""

    def __init__(self, total: int, unit: str, delay: float = 2.0):
        from tqdm import tqdm

        self._bar = tqdm(
            total=total,
            unit=unit,
            delay=delay,
            file=sys.stderr,
            unit_scale=True,
            dynamic_ncols=True,
            leave=False,
        )
        self._done = 0

    def advance(self, done: int, total: int) -> None:
        if self._bar.total != total:  # e.g. frames at --fps: fewer than records
            self._bar.total = total
        self._bar.update(done - self._done)
        self._done = done

    def close(self) -> None:
        self._bar.close()


def _progress_bar(total: int, unit: str, delay: float = 2.0) -> _Bar:
    return _Bar(total, unit, delay)


# -------------------------------------------------------------------------------------- check
def cmd_check(args) -> int:
    from workbench.scene.catalog import find_scene
    from workbench.scene.loader import load_scene, parse_override

    overrides = dict(parse_override(s) for s in args.overrides)
    scene = load_scene(find_scene(args.scene), overrides)
    st = scene.settings
    print(f"{scene.source}: valid. {scene.description}".rstrip())
    print(
        f"  {st.n_steps} steps of {st.dt:g} s ({st.duration:g} s), "
        f"{st.n_steps // st.record_every + 1} records"
    )
    for b in scene.bodies:
        props = b.mass_properties
        what = "fixed" if b.fixed else (f"{props.mass:.6g} kg" if props else "from URDF")
        print(f"  body {b.name}: {b.shape.type}, {what}")
    for kind in ("joints", "springs", "prescribed", "observers"):
        items = getattr(scene, kind)
        if items:
            names = [getattr(x, "name", None) or x.body or x.joint for x in items]
            print(f"  {kind}: {', '.join(names)}")
    if scene.parameters:
        print("  parameters: " + ", ".join(f"{k}={v}" for k, v in scene.parameters.items()))
    return 0


# ----------------------------------------------------------------------------------- ensemble
def cmd_ensemble(args) -> int:
    from workbench.scene.catalog import find_scene
    from workbench.ensemble.run import SceneRef, run_ensemble
    from workbench.errors import SceneError
    from workbench.scene.loader import parse_override

    overrides = tuple(parse_override(s) for s in args.overrides)
    for name in ("dt", "duration"):
        value = getattr(args, name)
        if value is not None and not value > 0:
            raise SceneError(f"--{name}", "", f"expected a positive number of seconds, got {value}")
    path = find_scene(args.scene)
    ref = SceneRef(str(path), overrides, args.dt, args.duration)
    scene = ref.load()  # validate before anything runs
    if not scene.is_random:
        print(
            f"workbench ensemble: note: {path} declares nothing random; every realization "
            "will equal the nominal run",
            file=sys.stderr,
        )
    out = Path(args.output or f"{path.stem}_ensemble.h5")
    bar = None if args.quiet else _progress_bar(args.n, "realizations", delay=0.0)
    try:
        result = run_ensemble(
            ref,
            args.n,
            out,
            entropy=args.seed,
            workers=args.workers,
            scheduler=args.scheduler,
            resume=args.resume,
            progress=None if bar is None else bar.advance,
        )
    except KeyboardInterrupt:
        print(
            f"workbench ensemble: interrupted; completed realizations are kept in {out}; "
            f"continue with --resume",
            file=sys.stderr,
        )
        return 130
    finally:
        if bar is not None:
            bar.close()
    failed = len(result.failed)
    if not args.quiet:
        print(
            f"wrote {out}: {result.ran} realizations run ({failed} failed) in "
            f"{result.wall_seconds:.1f} s; seed {result.entropy}"
        )
    if failed:
        first = next(iter(result.failed.items()))
        print(
            f"workbench ensemble: {failed} realizations failed and are marked in the file; "
            f"first: {first[0]}: {first[1]}",
            file=sys.stderr,
        )
    return 0


def cmd_stats(args) -> int:
    import json

    from workbench.errors import StoreError
    from workbench.ensemble.report import ensemble_summary

    if not 0 < args.band < 1:
        raise StoreError(f"--band: expected a probability in (0, 1), got {args.band}")
    info = ensemble_summary(args.file, args.band)
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    print(
        f"{info['path']}: {info['n_completed']} of {info['n_realizations']} realizations "
        f"completed; status {info['status_counts']}; seed {info['seed_entropy']}"
    )
    if info["params"]:
        print("sampled parameters (mean, std, cv, min, max):")
        for key, val in info["params"].items():
            for j, st in enumerate(val if isinstance(val, list) else [val]):
                label = key if not isinstance(val, list) else f"{key}[{j}]"
                if st.get("n"):
                    print(
                        f"  {label:<28} {st['mean']:>12.6g} {st['std']:>12.6g} "
                        f"{st['cv']:>8.3f} {st['min']:>12.6g} {st['max']:>12.6g}"
                    )
    print(f"observers (peak |nominal|, peak |mean|, widest {100 * info['p_c']:g}% band):")
    for name, obs in info["observers"].items():
        for row in obs["components"]:
            unit = f" {row['unit']}" if row["unit"] else ""
            print(
                f"  {name}.{row['component']:<10} {row.get('nominal_peak', float('nan')):>12.6g}"
                f" {row['mean_peak']:>12.6g} {row['band_max_width']:>12.6g}{unit}"
            )
        print(
            f"  {name}: conv(n) = {obs['convergence_final']:.6g}, changed "
            f"{100 * obs['convergence_change_last_10pct']:.2f}% over the last 10% of realizations"
        )
    return 0


# ------------------------------------------------------------------------------------ inspect
def cmd_inspect(args) -> int:
    import json

    from workbench.store import describe

    info = describe(args.file)
    if args.json:
        print(json.dumps(info, indent=2, default=str))
        return 0
    print(_format_description(info))
    return 0


def _format_description(info: dict) -> str:
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
    if info.get("failed"):
        lines.append(f"  failed: {info['failed']}")
    t = info.get("time", {})
    if t:
        lines.append(f"  time: {t.get('nt')} records from {t.get('start')} to {t.get('stop')} s")
    lines.append(f"  bodies: {', '.join(info.get('bodies', []))}")
    for section in ("observers", "params", "datasets"):
        items = info.get(section) or {}
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


# --------------------------------------------------------------------------------------- plot
def cmd_plot(args) -> int:
    from workbench.errors import StoreError
    from workbench.figures.trajectories import plot_observer
    from workbench.store import TrajectoryStore, read_trajectory

    with TrajectoryStore.open(args.file) as store:
        is_ensemble = store.attrs.get("kind") == "ensemble"
    stem = Path(args.file).with_suffix("")
    if args.param is not None or (is_ensemble and args.realization == 0 and args.band != 0):
        from workbench.ensemble import report
        if not is_ensemble:
            raise StoreError(f"{args.file}: --param/--band/--convergence need an ensemble file")
        if args.param is not None:
            out = Path(args.output or f"{stem}_{args.param.replace('/', '_')}.png")
            written = report.plot_parameter(args.file, args.param, out)
        elif args.convergence:
            out = Path(args.output or f"{stem}_{args.observer}_convergence.png")
            written = report.plot_ensemble_convergence(args.file, args.observer, out)
        else:
            p_c = 0.9 if args.band is None else args.band
            if not 0 < p_c < 1:
                raise StoreError(f"--band: expected a probability in (0, 1), got {p_c}")
            out = Path(args.output or f"{stem}_{args.observer}_band.png")
            written = report.plot_ensemble_observer(args.file, args.observer, out, p_c)
        print(f"wrote {written}")
        return 0
    traj = read_trajectory(args.file, args.realization)
    out = Path(args.output or f"{stem}_{args.observer}.png")
    try:
        written = plot_observer(traj, args.observer, out)
    except KeyError as exc:
        raise StoreError(f"{args.file}: --observer: {exc.args[0]}") from None
    print(f"wrote {written}")
    return 0


# ----------------------------------------------------------------------------------- validate
def cmd_validate(args) -> int:
    import json

    from workbench.analysis.validation import validate_files

    metrics = (
        ("instantaneous", "first_passage", "accumulated")
        if args.metric == "all"
        else (args.metric.replace("-", "_"),)
    )
    report = validate_files(
        args.model,
        args.experiments,
        args.observer,
        component=args.component,
        lam=args.lam,
        epsilon=args.epsilon,
        metrics=metrics,
        interpolate=args.interpolate,
        chunk_size=args.chunk_size,
    )
    if args.output:
        Path(args.output).write_text(json.dumps(report.to_json(), indent=1) + "\n")
    if args.plot:
        _validation_plot(args, report)
    if args.json:
        print(json.dumps(report.to_json(), indent=1))
        return 0
    unit = f" {report.unit}" if report.unit else ""
    if "lambda" in report.threshold:
        threshold = f"eps = {report.threshold['lambda']:g} |experiment|"
    else:
        threshold = f"eps = {report.threshold['epsilon']:g}{unit}"
    excluded = f", {report.n_excluded} incomplete left out" if report.n_excluded else ""
    n_exp = len(report.experiments)
    print(
        f"{report.observer}.{report.component}: {report.n_model} model realizations"
        f"{excluded}, {n_exp} experiment{'s' if n_exp != 1 else ''}, {report.time.size} instants "
        f"in [{report.window[0]:g}, {report.window[1]:g}] s"
        f"{' (model interpolated)' if report.interpolated else ''}; {threshold}"
    )
    print(f"  {'metric':<15}{'r(t_end)':>10}{'min':>10}{'mean':>10}")
    for name, row in report.summary().items():
        print(
            f"  {name.replace('_', '-'):<15}{row['final']:>10.4f}{row['min']:>10.4f}"
            f"{row['mean']:>10.4f}"
        )
    for path in (args.output, args.plot):
        if path:
            print(f"wrote {path}")
    return 0


def _validation_plot(args, report) -> None:
    from workbench.figures.validation import plot_validation

    unit = f" [{report.unit}]" if report.unit else ""
    plot_validation(
        report.time,
        report.metrics,
        args.plot,
        model_sample=report.model_sample,
        experiments=report.experiment_values,
        experiment_labels=report.experiments,
        ylabel=f"{report.observer}.{report.component}{unit}",
        title=f"{Path(args.model).name} vs {len(report.experiments)} experiments",
    )


# ------------------------------------------------------------------------------ infer, design
def cmd_infer(args) -> int:
    import json

    from workbench.scene.catalog import find_spec
    from workbench.analysis.inference import format_inference, inference_report, load_spec, run_inference
    from workbench.scene.loader import parse_override

    spec = load_spec(find_spec(args.spec), dict(parse_override(s) for s in args.overrides))
    result = run_inference(spec, exact=args.exact, seed=args.seed)
    report = inference_report(result)
    if args.output:
        Path(args.output).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2) if args.json else format_inference(report))
    if args.plot:
        from workbench.figures.inference import write_inference_plots

        written = write_inference_plots(result, args.plot)
        if not args.json:
            print("wrote " + ", ".join(map(str, written)))
    if not result.converged:
        print(f"workbench infer: {spec.source}: {'; '.join(result.problems())}", file=sys.stderr)
        return 1
    return 0


def cmd_design(args) -> int:
    import json

    from workbench.scene.catalog import find_spec
    from workbench.analysis.inference import (
        design_report,
        format_design,
        load_spec,
        parse_counts,
        run_design,
    )
    from workbench.scene.loader import parse_override

    spec = load_spec(find_spec(args.spec), dict(parse_override(s) for s in args.overrides))
    run = run_design(
        spec,
        etas=args.eta,
        counts=None if args.n is None else parse_counts(args.n),
        parameters=args.param,
        correlation_length=args.lam,
        seed=args.seed,
    )
    report = design_report(run)
    if args.output:
        Path(args.output).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2) if args.json else format_design(report))
    if args.plot:
        from workbench.figures.inference import write_design_plots

        written = write_design_plots(run, args.plot)
        if not args.json:
            print("wrote " + ", ".join(map(str, written)))
    if not report["converged"]:
        print(f"workbench design: {spec.source}: some designs were not confirmed", file=sys.stderr)
        return 1
    return 0


# ------------------------------------------------------------------------------------- scenes
def cmd_scenes(args) -> int:
    from workbench.scene.catalog import scene_summary, shipped_scenes

    files = shipped_scenes()
    if not files:
        print(
            "no shipped scenes found (set WORKBENCH_SCENES to a folder of scene files)",
            file=sys.stderr,
        )
        return 1
    width = max(len(f.stem) for f in files)
    print(f"shipped scenes in {files[0].parent}:")
    for f in files:
        print(f"  {f.stem:<{width}}  {scene_summary(f)}")
    print("run one with: workbench run NAME -o NAME.h5")
    return 0


# ------------------------------------------------------------------------------------- replay
def cmd_replay(args) -> int:
    from workbench.errors import WorkbenchError
    from workbench.scene.loader import scene_from_json
    from workbench.store import TrajectoryStore

    with TrajectoryStore.open(args.file) as store:
        traj = store.read(args.realization)
        scene = scene_from_json(store.attrs.get("scene_json", ""), source=args.file)
    if args.frames:
        from workbench.viewer import render_frames

        try:
            w, h = (int(x) for x in args.size.lower().split("x"))
        except ValueError:
            raise WorkbenchError(f"--size: expected WIDTHxHEIGHT, got {args.size!r}") from None
        bar = _progress_bar(traj.n_times, "frames")
        try:
            paths = render_frames(
                scene,
                traj,
                args.frames,
                reverse=args.reverse,
                width=w,
                height=h,
                fps=args.fps,
                progress=bar.advance,
            )
        finally:
            bar.close()
        print(f"wrote {len(paths)} frames to {args.frames}")
        return 0
    from workbench.viewer import replay

    replay(scene, traj, reverse=args.reverse, speed=args.speed, loop=args.loop, hold=args.hold)
    return 0

