"""Laws named in specs (:func:`uncertainty.distributions.make_distribution`): a ``dist`` that is
not a name is refused like an unknown one (found by the fuzz suite, issue 39: ``dist: [normal,
normal]`` made ``workbench inverse`` die with ``TypeError: unhashable type: 'list'``)."""

from __future__ import annotations

import pytest

from uncertainty.distributions import make_distribution
from uncertainty.errors import UncertaintyError


@pytest.mark.parametrize("dist", [["normal", "normal"], {"a": 1}, 3, None])
def test_a_dist_that_is_not_a_name_is_refused(dist):
    with pytest.raises(UncertaintyError, match="unknown distribution"):
        make_distribution({"dist": dist, "mean": 0.0, "std": 1.0})
