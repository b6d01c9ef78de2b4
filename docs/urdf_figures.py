"""Figures of docs/urdf.md from an ensemble of the KUKA arm (scenes/kuka_posture.yaml).

Regenerate (runtime in docs/urdf.md)::

    workbench ensemble kuka_posture -n 100 --seed 22 --workers 2 -o kuka.h5
    python docs/urdf_figures.py kuka.h5

It writes PNGs to docs/figures/urdf/: the 90% confidence band of the end effector (the scene's
``tool`` observer, a point of link 7: ``workbench plot kuka.h5 --observer tool --band 0.9``),
the band of joint 2's angle (``workbench plot kuka.h5 --joint arm/lbr_iiwa_joint_2 --band 0.9``)
and a frame of the nominal run with every link drawn where it was recorded (``workbench replay
kuka.h5 --frames DIR``, the nominal run).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
from figure_setup import REPO

from workbench.ensemble import report
from workbench.ensemble.statistics import confidence_band, mean_response
from workbench.figures.trajectories import plot_band
from workbench.replay.viewer import render_frames
from workbench.scene.loader import scene_from_json
from workbench.sim.state import channel
from workbench.store import TrajectoryStore

OUT = REPO / "docs" / "figures" / "urdf"
P_C = 0.9
JOINT = "arm/lbr_iiwa_joint_2"
FRAME_AT = 1.0  # s: the heavier realizations sag most about then


def main(paths: list[str]) -> int:
    (path,) = paths
    OUT.mkdir(parents=True, exist_ok=True)
    print(report.plot_ensemble_observer(path, "tool", OUT / "kuka_tool_band.png", P_C))
    with TrajectoryStore.open(path) as store:
        nominal = store.read_nominal()
        k = nominal.joint_index(JOINT)
        Y = store.read_array("joints/position")[:, :, k : k + 1]
        scene = scene_from_json(store.attrs["scene_json"], source=path)
        time = store.schema.time
    _, info = channel(nominal, joint=JOINT, field="position")
    title = f"{JOINT}: joint angle — {Y.shape[0]} realizations, P_c = {P_C:g}"
    lo, hi = confidence_band(Y, P_C)
    nom = nominal.joint_position[:, k : k + 1]
    out = OUT / "kuka_joint2_band.png"
    print(plot_band(time, nom, mean_response(Y), lo, hi, info, out, p_c=P_C, title=title))
    i = int(np.argmin(np.abs(nominal.time - FRAME_AT)))
    with tempfile.TemporaryDirectory() as tmp:
        (frame,) = render_frames(
            scene, nominal.truncated(i + 1), Path(tmp), width=480, height=360, fps=1.0 / FRAME_AT
        )[-1:]
        shutil.copy(frame, OUT / "kuka_frame.png")
    print(OUT / "kuka_frame.png")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
