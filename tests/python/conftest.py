"""Fixtures of the podsim Python tests (run by ctest as `python3 -m pytest tests/python`
with PYTHONPATH=build/python and PODSIM_BINARY=build/cli/podsim).

The CLI is the oracle: a report from Python must be the CLI's, byte for byte."""

import os
import pathlib
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


def podsim_binary():
    binary = os.environ.get("PODSIM_BINARY") or str(REPO / "build" / "cli" / "podsim")
    if not os.access(binary, os.X_OK):
        pytest.fail(f"no podsim CLI at {binary}: set PODSIM_BINARY (ctest does)")
    return binary


def cli(*args, cwd=REPO):
    """Runs the podsim CLI: (exit code, stdout, stderr)."""
    done = subprocess.run([podsim_binary(), *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=600)
    return done.returncode, done.stdout, done.stderr


def cli_error(*args, cwd=REPO):
    """The message a user error prints (without "podsim: " and the newline)."""
    code, out, err = cli(*args, cwd=cwd)
    assert code == 2, f"expected a user error (exit 2), got {code}: {err}"
    assert err.startswith("podsim: ")
    return err[len("podsim: "):].rstrip("\n")


def conformance_dumps():
    """The real XLA dumps folder kept beside the clone (shared/conformance/real-dumps
    in a parent of the repository), or $PODSIM_REAL_DUMPS; None when absent."""
    given = os.environ.get("PODSIM_REAL_DUMPS")
    if given:
        return pathlib.Path(given) if pathlib.Path(given).is_dir() else None
    for parent in REPO.parents:
        folder = parent / "shared" / "conformance" / "real-dumps"
        if folder.is_dir():
            return folder
    return None


@pytest.fixture(autouse=True)
def _in_repo(monkeypatch):
    """Relative workload paths read as from the repository top, as the CLI is run."""
    monkeypatch.chdir(REPO)
