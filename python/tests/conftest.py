import os

import numpy as np
import posenc
import pytest
from hypothesis import HealthCheck, settings

# Random shapes, positions and data; a failing example is printed with its seed. No example
# database, so nothing is written next to the sources. HYPOTHESIS_PROFILE=thorough for more.
_common = dict(deadline=None, database=None, print_blob=True,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("default", max_examples=100, **_common)
settings.register_profile("thorough", max_examples=1000, **_common)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

ISAS = posenc.available_isas()


def pytest_report_header(config):
    return (f"posenc {posenc.version()} from {posenc.library_path()}; CPU {posenc.cpu_name()}; "
            f"ISAs available: {' '.join(ISAS)} (active by default: {posenc.active_isa()})")


@pytest.fixture(scope="session", autouse=True)
def _restore_isa():
    """Tests switch the active ISA themselves (set_isa is process-wide); put it back."""
    default = posenc.active_isa()
    yield
    posenc.set_isa(default)


def pytest_generate_tests(metafunc):
    # Every test that takes `isa` runs once per ISA this machine has; it calls
    # posenc.set_isa(isa) itself (a plain argument, not a fixture, so that hypothesis's
    # examples all run on it).
    if "isa" in metafunc.fixturenames:
        metafunc.parametrize("isa", ISAS)


@pytest.fixture
def rng():
    return np.random.default_rng(20240601)
