"""The command line's shared option handling (:mod:`workbench.cli.common`)."""

from __future__ import annotations

import argparse

import pytest

from workbench.cli.common import workers_value
from workbench.tasks.inputs import resolve_workers
from workbench.ensemble.executors import auto_workers


def test_workers_default_to_this_process_alone():
    assert resolve_workers(None) == 1
    assert resolve_workers(None, "tcp://127.0.0.1:8786") == 1  # a cluster's size is its own


def test_a_local_dask_cluster_gets_a_worker_per_core_unless_told():
    assert resolve_workers(None, "local") == auto_workers()
    assert resolve_workers(1, "local") == 1
    assert resolve_workers(3, "local") == 3


def test_auto_is_one_worker_per_usable_core():
    assert resolve_workers("auto") == auto_workers()
    assert resolve_workers(workers_value("auto")) == auto_workers()


def test_workers_must_be_a_whole_number_or_auto():
    assert workers_value("4") == 4
    with pytest.raises(argparse.ArgumentTypeError, match="'auto', got 'many'"):
        workers_value("many")
