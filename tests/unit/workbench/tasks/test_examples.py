"""The ``Examples`` of every task function run (``doctest``), in a scratch folder, and ``help()``
of each public task shows a signature without executor internals and an example (issue 37)."""

from __future__ import annotations

import doctest
import importlib
import inspect
import pydoc

import pytest

import workbench

MODULES = [
    "workbench.tasks.inputs",
    "workbench.tasks.run",
    "workbench.tasks.ensemble",
    "workbench.tasks.reverse",
    "workbench.tasks.pasts",
    "workbench.tasks.sensitivity",
    "workbench.tasks.inference",
    "workbench.tasks.inverse",
    "workbench.tasks.validate",
    "workbench.tasks.markov",
    "workbench.tasks.replay",
    "workbench.store.xarray_view",
]

TASKS = ["run", "ensemble", "reverse", "pasts", "sensitivity", "infer", "design", "inverse",
         "validate", "markov_train", "markov_compare", "replay"]  # fmt: skip

#: What a task's signature must not show: the executors' plumbing of the library beneath.
PLUMBING = ("executor", "scheduler", "ref", "sampler", "SceneRef", "Recipe", "entropy")


@pytest.mark.parametrize("name", MODULES)
def test_the_examples_of_each_task_module_run(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, raise_on_error=False)
    assert result.failed == 0
    assert result.attempted > 0


@pytest.mark.parametrize("name", TASKS)
def test_help_shows_a_plain_signature_and_an_example(name):
    function = getattr(workbench, name)
    parameters = inspect.signature(function).parameters
    assert not set(parameters) & set(PLUMBING)
    assert "workers" in parameters or name in ("run", "infer", "design", "inverse", "validate",
                                               "replay")  # fmt: skip
    text = pydoc.render_doc(function, renderer=pydoc.plaintext)
    assert f"{name}(" in text and "Examples" in text and ">>> " in text


def test_the_task_names_are_the_api():
    assert set(TASKS) <= set(workbench.__all__)
    assert all(callable(getattr(workbench, name)) for name in TASKS)


def test_the_ensemble_package_stays_importable_beside_the_task():
    """``workbench.ensemble`` is the task; its package's modules import by name."""
    import workbench.ensemble.statistics  # noqa: F401 - binds nothing over the task
    from workbench.ensemble import run as run_module

    assert callable(workbench.ensemble) and not inspect.ismodule(workbench.ensemble)
    assert hasattr(run_module, "run_ensemble")


@pytest.mark.parametrize("package", ["workbench", "reverse", "uncertainty"])
def test_every_api_name_of_a_top_level_package_resolves_with_a_docstring(package):
    module = importlib.import_module(package)
    for name in module.__all__:
        value = getattr(module, name)
        if name != "__version__":
            assert inspect.getdoc(value), f"{package}.{name} has no docstring"
