"""Tiny generated models (the real demo-model builder, real on-disk format), built once per test session."""

import pytest

from specscope.engine_adapter.demo_model import build_demo_model
from specscope.engine_adapter.loader import load_model


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
