"""``engine_adapter.mlx_lm_compat``: mlx-lm's private names in one place, and what an untested mlx-lm is told."""

from __future__ import annotations

import pathlib

import mlx_lm.utils
import pytest

from specscope.engine_adapter import mlx_lm_compat, preflight
from specscope.errors import SpecscopeError

SRC = pathlib.Path(mlx_lm_compat.__file__).parents[1]


def test_the_private_name_is_used_in_one_module_only():
    users = sorted(str(p.relative_to(SRC)) for p in SRC.rglob("*.py") if "_get_classes" in p.read_text(encoding="utf-8"))
    assert users == ["engine_adapter/mlx_lm_compat.py"]


def test_get_classes_builds_from_a_config_and_refuses_an_unknown_type():
    model_class, args_class = mlx_lm_compat.get_classes({"model_type": "llama"})
    assert model_class.__name__ == "Model" and args_class.__name__ == "ModelArgs"
    with pytest.raises((ValueError, ImportError)):
        mlx_lm_compat.get_classes({"model_type": "no_such_architecture"})


def test_an_mlx_lm_without_the_name_is_a_clear_message(monkeypatch):
    monkeypatch.delattr(mlx_lm.utils, "_get_classes")
    with pytest.raises(SpecscopeError, match=r"no mlx_lm.utils._get_classes.*pip install mlx-lm=="):
        mlx_lm_compat.get_classes({"model_type": "llama"})


def test_an_untested_version_is_named_with_its_fix():
    assert mlx_lm_compat.untested(mlx_lm_compat.TESTED[-1]) is None
    why = mlx_lm_compat.untested("0.99.0")
    assert why and "0.99.0" in why and f"mlx-lm=={mlx_lm_compat.TESTED[-1]}" in why
    assert "not installed" in (mlx_lm_compat.untested(None) or "")


@pytest.mark.parametrize("installed, status", [(mlx_lm_compat.TESTED[-1], "pass"), ("0.99.0", "warn")])
def test_pre_flight_warns_on_an_untested_mlx_lm(installed, status):
    check = preflight.check_versions({"system": "Linux", "mlx_device": "Device(cpu, 0)",
                                      "versions": {"mlx": "0.32.4", "mlx-lm": installed}})
    assert check["status"] == status
    if status == "warn":
        assert "0.99.0" in check["evidence"] and "pip install mlx-lm==" in check["fix"]
