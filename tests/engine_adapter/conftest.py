"""Tiny generated models (the real demo-model builder, real on-disk format), built once per test session.

``model_dirs`` and friends: the demo models (hybrid, dense, draft). ``families_root``: the folder the
family models of ``families.py`` are built into, one per session for every module that uses them
(conformance, structure, families), so each family is built once.
"""

import pytest

from specscope.engine_adapter.model.demo_model import build_demo_model
from specscope.engine_adapter.model.loader import load_model


@pytest.fixture(scope="session")
def model_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    return {kind: build_demo_model(root / kind, kind) for kind in ("hybrid", "dense", "draft")}


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
