"""python/README.md's install recipe, run as written (issue 26): the shell block of its
"## Install" section, line by line from the repository root, with HOME a temporary
directory (the recipe's ~/.venvs/posenc), then the environment's Python imports posenc and
rotates. It used to say `pip install ./python`, which Debian's Python refuses outside a
virtual environment (PEP 668), and install-deps.sh without --python.

Run where the package's build has a CMake build directory to reuse
(POSENC_CMAKE_BUILD_DIR, as scripts/test-python.sh exports it), so that nothing is compiled
again (about 20 s); skipped otherwise, with the reason.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "python" / "README.md"


def install_block():
    text = README.read_text()
    section = text[text.index("## Install"):]
    section = section[:section.index("\n## ", 1)]
    block = re.search(r"```sh\n(.*?)```", section, flags=re.S)
    assert block, "no ```sh block in the README's Install section"
    return [line.split("#")[0].strip() for line in block.group(1).splitlines()
            if line.split("#")[0].strip()]


def test_readme_block_is_the_venv_recipe():
    lines = install_block()
    assert lines[0] == "scripts/install-deps.sh --python"
    assert any(line.startswith("python3 -m venv") for line in lines)
    assert not any(re.match(r"pip3? install", line) for line in lines), \
        "a bare pip install is refused by Debian's Python (PEP 668)"


def test_readme_install_runs_as_written(tmp_path):
    if not (ROOT / "scripts" / "install-deps.sh").is_file():
        pytest.skip(f"no repository at {ROOT}")
    if not os.environ.get("POSENC_CMAKE_BUILD_DIR"):
        pytest.skip("POSENC_CMAKE_BUILD_DIR is not set (scripts/test-python.sh sets it): the "
                    "recipe would compile the library from scratch")
    if not Path("/usr/bin/python3").is_file():
        pytest.skip("no /usr/bin/python3 (the recipe's Debian Python)")
    env = dict(os.environ, HOME=str(tmp_path), PIP_DISABLE_PIP_VERSION_CHECK="1")
    for name in ("VIRTUAL_ENV", "PYTHONPATH", "POSENC_LIBRARY", "PYTHONHOME"):
        env.pop(name, None)
    # the Debian python3 of the recipe, not the test's venv
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if not p.startswith(str(Path(sys.prefix))))
    for line in install_block():
        done = subprocess.run(["bash", "-c", line], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, f"{line}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    python = tmp_path / ".venvs" / "posenc" / "bin" / "python"
    code = ("import numpy as np, posenc; q = np.ones((2, 1, 8), np.float32); "
            "posenc.rope(posenc.RopePlan(8), q, start_pos=3); "
            "print(posenc.library_path(), q[1, 0, 0])")
    done = subprocess.run([str(python), "-c", code], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert str(tmp_path) in done.stdout.split()[0]  # the environment's own libposenc.so
