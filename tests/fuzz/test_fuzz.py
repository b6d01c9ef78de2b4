"""The fuzz suite's bounded sample in the slow tier (issue 39): hostile hints files, Markov
tables, inference and inverse specs and damaged HDF5 files, each read by its commands
(:mod:`tests.fuzz.inputs`), must end ``ok`` with finite numbers within bounds, refused in one
line naming the input, or a run marked failed: never a traceback, a hang or ``ok`` with
numbers no motion has. ``python -m tests.fuzz.run`` runs 1000 and prints the counts."""

from __future__ import annotations

import numpy as np
import pytest

from tests.fuzz.inputs import KINDS, make_case, mutate_data, mutate_text
from tests.fuzz.run import BAD, run_suite

#: Cases of the sample: every kind several times (about a minute idle).
SAMPLE = 48


@pytest.mark.slow
def test_a_sample_of_hostile_inputs_never_raises_hangs_or_says_ok_with_bad_numbers():
    reported: list[str] = []
    counts = run_suite(seed=39, indices=range(SAMPLE), timeout=120, report=reported.append)
    assert not any(counts[c] for c in BAD), "\n".join(reported)
    assert counts["refusal_unlocated"] == 0, "\n".join(reported)
    assert sum(counts[f"{kind}:ok"] + counts[f"{kind}:refused"] for kind in KINDS) > SAMPLE / 2


def test_cases_are_made_again_from_their_seed_and_index(tmp_path):
    written = []
    for folder in ("a", "b"):
        case = make_case(5, 9, {"reverse": tmp_path / "r.h5"})
        (tmp_path / folder).mkdir()
        case.write(tmp_path / folder)
        written.append((case.argv, case.kind, (tmp_path / folder / case.input_name).read_bytes()))
    assert written[0] == written[1] and written[0][1] == KINDS[9 % len(KINDS)]


def test_mutations_change_the_document():
    data = {"hints": [{"body": "block", "slide": {"direction": [1, 0, 0], "speed": 2.0}}]}
    rng = np.random.default_rng(0)
    assert sum(mutate_data(data, rng) != data for _ in range(50)) >= 45  # some write back
    text = "hints:\n  - body: block\n    bounce: 0.15\n"
    assert sum(mutate_text(text, rng) != text for _ in range(50)) >= 45
