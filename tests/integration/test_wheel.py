"""The installed package is one namespace: the wheel holds only ``weir/``, and a user's own
``client.py``, ``protocol.py``, ``broker.py`` and ``pipeline.py`` never shadow ours.

Built and installed the way a user installs it: a wheel, a fresh venv, and the
``weir`` and ``weir-admin`` commands run from a folder holding those decoys.
"""

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.broker_process import READY, REPO, free_port

DECOYS = ("client", "protocol", "broker", "pipeline")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--wheel-dir", str(out), str(REPO)], check=True, timeout=300)
    [built] = out.glob("weir-*.whl")
    return built


def test_the_wheel_holds_only_the_weir_namespace(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert len(names) == len(set(names))  # weir/broker etc. are symlinks in the tree: nothing is packed twice
    top_level = {name.split("/")[0] for name in names}
    assert {t for t in top_level if not t.endswith(".dist-info")} == {"weir"}
    for package in ("weir/broker/__main__.py", "weir/protocol/schema.py", "weir/client/producer/producer.py",
                    "weir/pipeline/source.py", "weir/client/py.typed", "weir/testing/plugin.py"):
        assert package in names
    for extension in ("weir/protocol/_record_scan.", "weir/client/_murmur2."):
        assert any(name.startswith(extension) and name.endswith(".so") for name in names), extension
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    scripts = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "weir = weir.broker.__main__:main" in scripts
    assert "weir-admin = weir.client.cli:main" in scripts
    assert "[pytest11]\nweir = weir.testing.plugin" in scripts  # the pytest plugin comes with the package


def test_installed_commands_ignore_a_users_own_modules(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    subprocess.run([venv / "bin" / "pip", "install", "--quiet", str(wheel)], check=True, timeout=600)
    project = tmp_path / "users-project"
    project.mkdir()
    for name in DECOYS:  # importing any of these is the bug this test is about
        (project / f"{name}.py").write_text(f"raise SystemExit('the user\\'s own {name}.py was imported')\n")

    python = venv / "bin" / "python"
    usage = subprocess.run([venv / "bin" / "weir", "--help"], cwd=project, capture_output=True, text=True, timeout=60)
    assert usage.returncode == 0 and "--data-dir" in usage.stdout, usage.stderr
    port = free_port()
    # ``python -m`` puts the working folder first on sys.path: the decoys are in the way if anything is.
    broker = subprocess.Popen([python, "-m", "weir.broker", "--port", str(port), "--data-dir", str(tmp_path / "data")],
                              cwd=project, stderr=subprocess.PIPE, text=True)
    try:
        for line in broker.stderr:
            if READY in line:
                break
        else:
            pytest.fail(f"the weir command exited ({broker.wait()}) before serving")
        admin = [venv / "bin" / "weir-admin", "--bootstrap-server", f"127.0.0.1:{port}", "topics"]
        created = subprocess.run([*admin, "create", "shadowing", "--partitions", "2"], cwd=project,
                                 capture_output=True, text=True, timeout=60)
        assert created.returncode == 0, created.stderr
        listed = subprocess.run([*admin, "list"], cwd=project, capture_output=True, text=True, timeout=60)
        assert listed.returncode == 0 and "shadowing" in listed.stdout, listed.stderr
        # weir.pipeline needs the pipeline extra; without it, the import fails on pyspark, not on our decoy.
        pipeline = subprocess.run([python, "-c", "import weir.pipeline"], cwd=project,
                                  capture_output=True, text=True, timeout=60)
        assert "No module named 'pyspark'" in pipeline.stderr and "own pipeline.py" not in pipeline.stderr
    finally:
        broker.terminate()
        broker.wait(15)
