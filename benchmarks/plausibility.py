"""Plausibility of backward runs (issue 15): the table of ``workbench markov compare`` for
``markov_block`` (and any scene and table given), with the wall time of each part.

For each scene: ``n`` forward PyBullet throws (the training's throw distribution), ``n`` more (the
noise floor) and ``n`` backward runs from the scene's state with the table
(:func:`reverse.plausibility.measure`), each backward run turned to a random heading and, unless
``--hints`` says otherwise, given a sliding hint in a random horizontal direction at a speed
uniform in [0, 1.5] m/s (the backward sample of docs/reverse.md, "Quantitative check"). It prints
the per-statistic table (medians, total-variation distance forward vs backward and its
forward-vs-forward floor, ratio), the classifier two-sample test, the range of earliest states,
and the two distances of docs/reverse.md with that section's bins (time to first liftoff in bins
of 0.1 s, transitions in bins of 5), then the wall time: forward, backward, statistics, all.

Acceptance of issue 15: 200 vs 200 runs in under 5 minutes on 2 cores; after items 2–4, every
distance at most 2× its floor, flight share within 0.05, classifier accuracy ≤ 0.65.

Usage::

    python benchmarks/plausibility.py                       # markov_block, 200 runs, 2 workers
    python benchmarks/plausibility.py --scene my_shape.yaml --table my_shape.json -n 200
    python benchmarks/plausibility.py --hints none          # the table alone, no sliding hint
    python benchmarks/plausibility.py --table markov_block_energy --smc   # the particle filter
    python benchmarks/plausibility.py --table markov_block_energy --smc --smc-scheme lift \
        --smc-beta 0.3 --hints none --smc-generation drop     # a filter generation per drop
    python benchmarks/plausibility.py --table markov_block_energy --smc --smc-scheme lift \
        --smc-beta 0.3 --hints none --landing-delta 0.2       # slow landings stick
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as benchmarks/lcp.py: small solves

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # before benchmarks/, whose reverse.py would shadow the package

from reverse.hints import load_hint_distribution, parse_hint_distribution  # noqa: E402
from reverse.markov import load_model  # noqa: E402
from reverse.plausibility import format_table, measure  # noqa: E402
from reverse.sampling import RunVariation  # noqa: E402
from reverse.stepper import StepSettings  # noqa: E402
from uncertainty.two_sample import total_variation  # noqa: E402
from workbench.scene.catalog import find_data, find_scene  # noqa: E402
from workbench.scene.loader import load_scene  # noqa: E402

#: The backward sample of docs/reverse.md: a slide in a random horizontal direction, 0–1.5 m/s.
MAX_SLIDE = 1.5

#: Bins of docs/reverse.md's distances: 0.1 s for the time to first liftoff, 5 transitions.
DOC_TIME_BIN = 0.1
DOC_TRANSITION_BIN = 5


def _doc_distances(comparison, duration: float) -> str:
    """The two distances of docs/reverse.md, with that section's bins."""
    values = comparison.values
    out = []
    for key, cuts in (
        ("liftoff", np.arange(DOC_TIME_BIN, duration - 1e-9, DOC_TIME_BIN)),
        ("transitions", np.arange(DOC_TRANSITION_BIN - 0.5, 1000.0, DOC_TRANSITION_BIN)),
    ):
        _, _, a, a2, b = values[key]
        out.append(
            f"{key}: forward vs backward {total_variation(a, b, cuts):.3f}, "
            f"forward vs forward {total_variation(a, a2, cuts):.3f}"
        )
    return "docs/reverse.md bins (0.1 s, 5 transitions): " + "; ".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scene", default="markov_block")
    ap.add_argument("--table", default="markov_block")
    ap.add_argument("-n", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--duration", type=float, help="default: the scene's settings.duration")
    ap.add_argument(
        "--hints",
        default="slide",
        help="'slide' (default: random direction, 0-1.5 m/s, on the moving body), 'slide-rest' "
        "(the same after a final rest drawn from the table's forward runs: at: rest), 'none', "
        "or a hints (distribution) file",
    )
    ap.add_argument("--out", help="also write the figures and JSON to this folder")
    ap.add_argument(
        "--smc",
        action="store_true",
        help="backward runs as the particle filter of reverse/smc.py (a table of kind energy)",
    )
    ap.add_argument(
        "--persist",
        action="store_true",
        help="contact persistence for box-box pairs (reverse/contacts.py, persist)",
    )
    ap.add_argument(
        "--per-contact-goals",
        action="store_true",
        help="with --smc: each separating contact of a drop draws its own goal speed "
        "(reverse/markov.py MarkovPolicy per_contact_goals)",
    )
    ap.add_argument(
        "--pivot",
        action="store_true",
        help="with --smc: a drop that keeps a corner or an edge pivots the body about it "
        "(reverse/markov.py MarkovPolicy pivot)",
    )
    ap.add_argument(
        "--lift-cache",
        help="folder to keep the lift law in (keyed by the table's and the scene's bytes), so "
        "that a rerun skips the throws",
    )
    ap.add_argument("--smc-beta", type=float, help="tempering of the filter (default 0.3)")
    ap.add_argument(
        "--smc-scheme",
        choices=("potential", "match", "ratio", "lift", "lift-central"),
        default="potential",
        help="lift: weights by the forward law against time before the final rest, fitted "
        "from the table's own throws run again (reverse.markov_training.table_lift_law)",
    )
    ap.add_argument(
        "--smc-generation",
        choices=("bin", "drop"),
        default="bin",
        help="with --smc: a filter generation per bin of 0.05 s (default) or per drop (each "
        "particle to its next contact-separation event, at most 0.05 s; schemes potential, "
        "lift, lift-central)",
    )
    ap.add_argument(
        "--landing-delta",
        type=float,
        default=0.0,
        metavar="M_PER_S",
        help="backward: landing contacts (the elastic branch) slipping at most this much stick "
        "(StepSettings.landing_delta; default 0: the sliding cut-off delta everywhere)",
    )
    args = ap.parse_args(argv)
    if not args.landing_delta >= 0.0:
        print(f"--landing-delta: expected >= 0 m/s, got {args.landing_delta}", file=sys.stderr)
        return 2
    if args.pivot and not args.smc:
        print("--pivot: needs --smc (the sampled runs take no such option)", file=sys.stderr)
        return 2
    if args.per_contact_goals and not args.smc:
        print(
            "--per-contact-goals: needs --smc (the sampled runs take no such option)",
            file=sys.stderr,
        )
        return 2

    path = find_scene(args.scene)
    scene = load_scene(path)
    model = load_model(find_data(args.table, what="contact-transition table"))
    body = next(b.name for b in scene.bodies if not b.fixed)
    rest = None
    if args.hints in ("slide", "slide-rest"):
        at = {"at": "rest"} if args.hints == "slide-rest" else {}
        dist = parse_hint_distribution(
            {"hints": [{"body": body, "slide": {"direction": "random",
                                                "speed": {"uniform": [0.0, MAX_SLIDE]}}, **at}]},
            scene.body_names,
        )  # fmt: skip
        if at:
            from reverse.semi_markov import FinalRest

            if model.hazards is None:
                print("--hints slide-rest needs a semi-Markov or energy table", file=sys.stderr)
                return 2
            rest = FinalRest(model.hazards, state=3)  # the shipped shapes rest on a face
    elif args.hints == "none":
        dist = None
    else:
        dist = load_hint_distribution(Path(args.hints), scene.body_names)
    dt = scene.settings.dt
    duration = args.duration or scene.settings.duration
    print(
        f"{path.name} with {args.table}: {args.n} forward + {args.n} forward + {args.n} backward "
        f"runs of {duration:g} s at dt = {dt:.6g} s, seed {args.seed}, {args.workers} workers, "
        f"hints {args.hints}, random heading{', particle filter' if args.smc else ''}"
        f"{', contact persistence' if args.persist else ''}"
        f"{', a generation per drop' if args.smc_generation == 'drop' else ''}"
        f"{f', landing cut-off {args.landing_delta:g} m/s' if args.landing_delta else ''}"
        f"{', drops that pivot' if args.pivot else ''}"
    )
    lift = {}
    if args.smc and args.smc_scheme.startswith("lift"):
        from reverse.markov_training import cached_lift_law

        t_law = time.perf_counter()
        table_file = find_data(args.table, what="contact-transition table")
        law, read = cached_lift_law(
            path, model, table_file, workers=args.workers, cache=args.lift_cache
        )
        if read:
            print(f"lift law: read from {args.lift_cache}")
        else:
            print(
                f"lift law: the table's {model.meta.get('n')} throws run again in "
                f"{time.perf_counter() - t_law:.1f} s (counts equal the table's)"
            )
        lift = {"lift_law": law}
    t0 = time.perf_counter()
    run = measure(
        path,
        model,
        n=args.n,
        seed=args.seed,
        dt=dt,
        duration=duration,
        variation=RunVariation(heading=True, hints=dist, rest=rest),
        workers=args.workers,
        options={
            **({"persist_contacts": True} if args.persist else {}),
            **({"per_contact_goals": True} if args.per_contact_goals else {}),
            **({"pivot": True} if args.pivot else {}),
            **(
                {"settings": StepSettings(dt, landing_delta=args.landing_delta)}
                if args.landing_delta
                else {}
            ),
        }
        or None,
        smc=args.smc,
        smc_options={
            "scheme": args.smc_scheme,
            **({} if args.smc_beta is None else {"beta": args.smc_beta}),
            **({} if args.smc_generation == "bin" else {"generation": args.smc_generation}),
            **lift,
        },
    )
    wall = time.perf_counter() - t0
    print(format_table(run.comparison))
    print(_doc_distances(run.comparison, duration))
    if "smc" in run.comparison.counts:
        f = run.comparison.counts["smc"]
        print(
            f"particle filter: {f['generations']} generations, {f['resamplings']} resamplings, "
            f"kept runs descend from {f['distinct_sampled_runs']} of {args.n} sampled runs, "
            f"smallest ESS {f['ess_min']:.3g}; raw particles faster than every throw at the "
            f"end: {f['raw_faster_share']:.3g}"
        )
    s = run.seconds
    print(
        f"wall time: forward {s['forward']:.1f} s ({2 * args.n} throws), backward "
        f"{s['backward']:.1f} s ({args.n} runs), statistics {s['statistics']:.1f} s; "
        f"all {wall:.1f} s"
    )
    if args.out:
        from workbench.figures.plausibility import plot_sequences, plot_statistics

        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "plausibility.json").write_text(run.comparison.to_json(), encoding="utf-8")
        plot_sequences(
            [r.states for r in run.samples["forward"]],
            [r.states for r in run.samples["backward"] if r.status == "ok"],
            dt,
            out / "sequences.png",
        )
        plot_statistics(run.comparison.values, out / "statistics.png")
        print(f"wrote {out}/plausibility.json, sequences.png, statistics.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
