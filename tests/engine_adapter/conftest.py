"""Tiny generated models (the real demo-model builder, real on-disk format), built once per test session.

``model_dirs`` and friends: the demo models (hybrid, dense, draft). ``families_root``: the folder the
family models of ``families.py`` are built into, one per session for every module that uses them
(conformance, structure, families), so each family is built once.
"""

import os

import pytest

from specscope.engine_adapter.model.demo_model import demo_model_path
from specscope.engine_adapter.model.loader import load_model


@pytest.fixture(scope="session")
def model_dirs():
    """The random demo models (read only), from the suite's demo cache: built once for the whole run under its lock
    (xdist's workers and the processes tests start share the suite's home), not once more in every worker."""
    home = os.path.join(os.environ["SPECSCOPE_TEST_HOME"], ".cache", "specscope")  # never a test's own home
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SPECSCOPE_HOME", home)
        return {kind: demo_model_path(kind) for kind in ("hybrid", "dense", "draft")}


@pytest.fixture(scope="session")
def hybrid(model_dirs):
    return load_model(model_dirs["hybrid"])


@pytest.fixture(scope="session")
def dense(model_dirs):
    return load_model(model_dirs["dense"])


@pytest.fixture(scope="session")
def draft(model_dirs):
    return load_model(model_dirs["draft"])


@pytest.fixture(scope="session")
def prompt(hybrid):
    return hybrid.encode("Explain why a verification pass over several tokens can cost as much as decoding.")


@pytest.fixture(scope="session")
def families_root(tmp_path_factory):
    return tmp_path_factory.mktemp("families")
