"""The suite runs from an empty home (tests/conftest.py; .ci/run too): every place specscope writes by default — the
demo cache, the app's autosaved sessions and settings, the Hugging Face cache — resolves inside it, never the real
home of the user running the tests."""

import os
import pwd
from pathlib import Path


def test_every_default_location_is_inside_the_empty_test_home():
    from specscope.engine_adapter.model.demo_model import specscope_home
    from specscope.gui.window_files import sessions_dir
    from specscope.model_ref import hub_cache_dir

    home = Path(os.environ["SPECSCOPE_TEST_HOME"]).resolve()
    real = Path(pwd.getpwuid(os.getuid()).pw_dir).resolve()
    assert home != real and Path.home().resolve() == home
    for where in (specscope_home(), sessions_dir(), hub_cache_dir()):
        assert where.resolve().is_relative_to(home), where
