"""Figures and numbers of the section "Contact-transition Markov model" of docs/reverse.md
(Twigg & James 2008 §4, Figs. 9-10).

Regenerate (about 90 s on 2 cores)::

    python docs/markov_figures.py

It loads the shipped table data/markov_block.json (``workbench markov train markov_block -n 1000
--seed 2008``), then

* runs 200 forward PyBullet throws of the block (seed 1, the training's sampling) and 200 more
  (seed 2: the noise floor of the comparison);
* runs 200 backward runs of the block at rest on the ground (random heading; a random sliding hint
  in a random direction at 0-1.5 m/s) with the Markov model (run i: ``--seed i``);
* plots the contact-state sequences like Fig. 9 (reverse time from left to right, rows sorted
  lexicographically in reverse time) to docs/figures/reverse/markov_sequences.png and the two
  statistics to docs/figures/reverse/markov_statistics.png;
* prints the table, the total-variation distances between forward and backward distributions of
  the time to the first liftoff (bins of 0.1 s) and of the number of transitions (bins of 5), and
  the same distances between the two forward samples. Deterministic: reruns print the same numbers.
"""

from __future__ import annotations

import time

import numpy as np
from figure_setup import REPO, plt  # noqa: E402  (the repository on sys.path, Agg)
from matplotlib.colors import ListedColormap  # noqa: E402

from reverse.goals.hints import Hint  # noqa: E402
from reverse.goals.markov import (  # noqa: E402
    STATE_NAMES,
    classify,
    load_model,
    number_of_transitions,
    time_to_first_liftoff,
)
from reverse.pasts.training import run_throws  # noqa: E402
from reverse.runs.contacts import ContactDetector  # noqa: E402
from reverse.runs.run import run_reverse  # noqa: E402
from uncertainty.two_sample import total_variation  # noqa: E402
from workbench.scene.loader import load_scene  # noqa: E402

OUT = REPO / "docs" / "figures" / "reverse"
SCENE = REPO / "scenes" / "markov_block.yaml"
TABLE = REPO / "data" / "markov_block.json"
N_RUNS = 200
WORKERS = 2
MAX_SLIDE = 1.5  # m/s, fastest random sliding hint
TIME_BINS = 15  # bins of the time to first liftoff over [0, duration] (0.1 s each)
TRANSITION_BIN = 5  # width of the bins of the number of transitions (200 runs spread over ~70)
COLOURS = ListedColormap(["white", "#ececec", "#fdae61", "#2c7bb6", "#d7191c"])  # -1 (none), 0-3


def forward_states(seed: int, dt: float, duration: float) -> np.ndarray:
    runs = run_throws(SCENE, N_RUNS, seed, dt=dt, duration=duration, workers=WORKERS)
    return np.stack([r.states for r in runs])


def backward_states(model, dt: float, duration: float) -> tuple[np.ndarray, list[str], float]:
    """Contact states (forward time order; −1 before a run that ended early), statuses, and the
    largest earliest speed."""
    n_steps = int(round(duration / dt))
    out = np.full((N_RUNS, n_steps + 1), -1, dtype=np.int8)
    statuses, speeds = [], []
    for i in range(N_RUNS):
        rng = np.random.default_rng(np.random.SeedSequence(10_000, spawn_key=(i,)))
        yaw = float(rng.uniform(0.0, 360.0))
        scene = load_scene(SCENE, {"yaw": yaw})
        phi = rng.uniform(0.0, 2.0 * np.pi)
        hint = Hint(
            "block",
            "slide",
            np.array([np.cos(phi), np.sin(phi), 0.0]),
            float(rng.uniform(0.0, MAX_SLIDE)),
        )
        res = run_reverse(scene, duration=duration, dt=dt, hints=[hint], seed=i, markov=model)
        traj = res.trajectory
        counts = traj.diagnostics["contact_count"].astype(int)
        # the last record is the scene's own state (its diagnostics are zeros): count it here
        with ContactDetector(scene) as det:
            final = traj.state(traj.n_times - 1)
            counts[-1] = len(det(final.position, final.orientation))
        out[i, n_steps + 1 - traj.n_times :] = classify(counts)
        statuses.append(traj.status)
        speeds.append(float(np.linalg.norm(traj.linear_velocity[0, 1])))
    return out, statuses, float(np.max(speeds))


def sort_rows(states: np.ndarray) -> np.ndarray:
    """Rows sorted lexicographically in reverse time (as in Fig. 9)."""
    rev = states[:, ::-1]
    order = np.lexsort(rev.T[::-1])
    return states[order]


def plot_sequences(fwd, bwd, dt, path):
    fig, axes = plt.subplots(2, 1, figsize=(8, 6.5), sharex=True)
    n = fwd.shape[1]
    extent = (0.0, (n - 1) * dt, fwd.shape[0], 0)
    for ax, data, title in (
        (axes[0], fwd, f"{len(fwd)} forward PyBullet throws"),
        (axes[1], bwd, f"{len(bwd)} backward runs from rest with the Markov model"),
    ):
        rows = sort_rows(data)[:, ::-1]  # reverse time from left (rest) to right
        im = ax.imshow(
            rows + 1,
            aspect="auto",
            interpolation="nearest",
            cmap=COLOURS,
            vmin=-0.5,
            vmax=4.5,
            extent=extent,
        )
        ax.set_title(title, fontsize=10)
        ax.set_ylabel("run")
    axes[1].set_xlabel("reverse time (s before the final state)")
    cbar = fig.colorbar(im, ax=axes, ticks=[1, 2, 3, 4], shrink=0.6)
    cbar.ax.set_yticklabels([f"{k} {s}" for k, s in enumerate(STATE_NAMES)])
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def transition_bins(*samples) -> np.ndarray:
    """Edges of bins of TRANSITION_BIN transitions covering the samples."""
    kmax = max(int(np.max(k)) for k in samples)
    return np.arange(0, kmax + TRANSITION_BIN + 1, TRANSITION_BIN) - 0.5


def plot_statistics(stats, duration, path):
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
    bins = np.linspace(0.0, duration, TIME_BINS + 1)
    k_bins = transition_bins(*(k for _, k in stats.values()))
    for label, (t, k) in stats.items():
        axes[0].hist(t, bins=bins, histtype="step", density=True, label=label)
        axes[1].hist(k, bins=k_bins, histtype="step", density=True, label=label)
    axes[0].set_xlabel("time to first liftoff (reverse time, s)")
    axes[1].set_xlabel("number of contact-state transitions")
    axes[0].set_ylabel("density")
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    model = load_model(TABLE)
    dt = model.dt
    duration = float(model.meta["duration"])
    print(f"table {TABLE.name}: {model.meta['command']}")
    print("P(state at t - dt | state at t):")
    for name, row in zip(STATE_NAMES, model.probabilities, strict=True):
        print(f"  {name:>6}: " + " ".join(f"{x:.5f}" for x in row))
    t0 = time.perf_counter()
    fwd = forward_states(1, dt, duration)
    fwd2 = forward_states(2, dt, duration)
    t1 = time.perf_counter()
    bwd, statuses, vmax = backward_states(model, dt, duration)
    t2 = time.perf_counter()
    print(
        f"forward runs: {2 * N_RUNS} in {t1 - t0:.1f} s; backward runs: {N_RUNS} in {t2 - t1:.1f} s"
    )
    bad = sum(s != "ok" for s in statuses)
    print(f"backward runs not ok: {bad}; fastest earliest speed {vmax:.2f} m/s")
    full = bwd.min(axis=1) >= 0
    stats = {}
    for label, data in (("forward", fwd), ("forward, 2nd sample", fwd2), ("backward", bwd[full])):
        t = time_to_first_liftoff(data, dt)
        k = number_of_transitions(data)
        stats[label] = (t, k)
        print(
            f"{label:>20}: time to first liftoff median {np.median(t):.3f} s (mean {t.mean():.3f}),"
            f" transitions median {np.median(k):.0f} (mean {k.mean():.2f}), states "
            + " ".join(f"{s}:{np.mean(data == s):.3f}" for s in range(4))
        )
    bins = np.linspace(0.0, duration, TIME_BINS + 1)
    for a, b in (("forward", "backward"), ("forward", "forward, 2nd sample")):
        tv_t = total_variation(stats[a][0], stats[b][0], bins[1:-1])  # interior edges
        k_bins = transition_bins(stats[a][1], stats[b][1])
        tv_k = total_variation(stats[a][1], stats[b][1], k_bins[1:-1])
        print(f"TV({a} | {b}): time to first liftoff {tv_t:.3f}, number of transitions {tv_k:.3f}")
    plot_sequences(fwd, bwd, dt, OUT / "markov_sequences.png")
    plot_statistics(stats, duration, OUT / "markov_statistics.png")
    print(f"wrote {OUT / 'markov_sequences.png'} and {OUT / 'markov_statistics.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
