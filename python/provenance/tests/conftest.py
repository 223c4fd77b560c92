"""Fixtures of the kl1_provenance tests: the fake `nvidia-smi` of the Rust tests
(crates/gpu-monitor/tests/fixtures/nvidia-smi-normal.sh: two H200s alternating busy and idle), the fake
torch beside this file, isolated git repositories, and benchmark scripts run as a user runs them
(`python bench.py`, in a subprocess of their own, so `__main__`, `sys.modules` and signals are theirs)."""

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "crates" / "gpu-monitor" / "tests" / "fixtures"
FAKE_TORCH = Path(__file__).resolve().parent / "fake_torch"
#: The `provenance` binary (tests/python-provenance/run.sh builds it).
PROVENANCE = os.environ.get("PROVENANCE_BIN", "provenance")


def git(repo: Path, *args: str) -> str:
    """git in `repo` with no user or system configuration (its own HOME)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(HOME=str(repo.parent / "git-home"), GIT_CONFIG_NOSYSTEM="1")
    (repo.parent / "git-home").mkdir(exist_ok=True)
    out = subprocess.run(
        ["git", "-c", "user.name=Test", "-c", "user.email=test@example.invalid", "-c", "init.defaultBranch=main",
         "-c", "commit.gpgsign=false", *args],
        cwd=repo, env=env, capture_output=True, text=True, check=True,
    )
    return out.stdout.strip()


def make_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q")
    (path / "a.txt").write_text("alpha\n")
    git(path, "add", "a.txt")
    git(path, "commit", "-q", "-m", "first")
    return path


@pytest.fixture
def fake_smi(tmp_path) -> Path:
    """A directory holding the Rust tests' fake `nvidia-smi` (and the shell body it sources)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shutil.copy(FIXTURES / "nvidia-smi-normal.sh", bin_dir / "nvidia-smi")
    shutil.copy(FIXTURES / "fake-common.sh", bin_dir / "fake-common.sh")
    (bin_dir / "nvidia-smi").chmod(0o755)
    return bin_dir


def script_env(smi_dir: Path, torch: bool = True, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("KL1_NVIDIA_SMI", "KL1_NVML_LIBRARY", "CUDA_VISIBLE_DEVICES", "PYTHONPATH", "FAKE_TORCH")}
    env["PATH"] = f"{smi_dir}{os.pathsep}{env.get('PATH', '')}"
    if torch:
        env["PYTHONPATH"] = str(FAKE_TORCH)
    env.update(extra)
    return env


def write_script(path: Path, body: str) -> Path:
    path.write_text(textwrap.dedent(body))
    return path


def run_script(script: Path, *args: str, cwd: Path, env: dict, timeout: float = 120) -> subprocess.CompletedProcess:
    r = subprocess.run([sys.executable, str(script), *args], cwd=cwd, env=env, capture_output=True, text=True,
                       timeout=timeout)
    assert r.returncode == 0, f"{script} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}"
    return r


def load(path: Path) -> dict:
    return json.loads(path.read_text())
