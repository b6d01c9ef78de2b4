"""The local Dask cluster's workers run without Dask's statistical profiler (it samples every
thread's stack each 10 ms, holding the GIL PyBullet's steps need;
``workbench/ensemble/cluster.py``), unless the user's environment sets it."""

from __future__ import annotations

import pytest

from tests.conftest import cli_env


def _profiler_on_workers(env) -> list:
    distributed = pytest.importorskip("distributed")
    from workbench.ensemble.cluster import local_dask_cluster

    def enabled():
        import dask

        return bool(dask.config.get("distributed.worker.profile.enabled"))

    with local_dask_cluster(1, env=env) as address, distributed.Client(address) as client:
        return list(client.run(enabled).values())


def test_the_local_clusters_workers_run_without_the_profiler():
    env = cli_env()
    env.pop("DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED", None)
    assert _profiler_on_workers(env) == [False]


def test_a_users_profiler_setting_wins():
    env = {**cli_env(), "DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED": "True"}
    assert _profiler_on_workers(env) == [True]
