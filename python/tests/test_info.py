"""posenc-info of the Python package: `python -m posenc`, and the installed console script."""

import subprocess
import sys
from pathlib import Path

import posenc
import pytest


def check_report(text):
    assert f"posenc {posenc.version()}" in text
    assert f"active: {posenc.active_isa()}" in text
    for kernel in posenc.kernels():
        assert kernel in text


def test_python_m_posenc():
    out = subprocess.run([sys.executable, "-m", "posenc"], check=True, capture_output=True,
                         text=True)
    check_report(out.stdout)


def test_usage_error():
    out = subprocess.run([sys.executable, "-m", "posenc", "--bogus"], capture_output=True,
                         text=True)
    assert out.returncode == 2 and "usage" in out.stderr


def test_installed_console_script():
    script = Path(sys.executable).parent / "posenc-info"
    if not script.exists():
        pytest.skip("posenc is not pip-installed in this interpreter's environment "
                    f"({script} missing): running from the source tree")
    out = subprocess.run([str(script)], check=True, capture_output=True, text=True)
    check_report(out.stdout)


def test_installed_package_bundles_the_library():
    """`pip install ./python` puts libposenc.so inside the package, and the package loads
    that one (not $POSENC_LIBRARY or the system's)."""
    package = Path(posenc.__file__).resolve().parent
    if package == Path(__file__).resolve().parents[1] / "posenc":
        pytest.skip("posenc is imported from the source tree, not an installed wheel")
    assert Path(posenc.library_path()).resolve().parent == package
    assert (package / "libposenc.so").is_file()
