"""The pytest plugin, installed with the wheel (entry point `pytest11`): pytest-benchmark's JSON gets one
record per benchmark, in that benchmark's entry, readable by `provenance show`."""

import json
import subprocess
import sys

from conftest import PROVENANCE, git, load, make_repo, script_env, write_script

TESTS = """
    import pytest

    @pytest.mark.parametrize("n", [100, 1000])
    def test_sum(benchmark, n):
        assert benchmark(sum, range(n)) == n * (n - 1) // 2

    def test_not_a_benchmark():
        assert True
"""


def run_pytest(repo, env, *args):
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--benchmark-max-time=0.05",
         "--kl1-provenance-backend=nvidia-smi", "--kl1-provenance-interval-ms=50", *args],
        cwd=repo, env=env, capture_output=True, text=True, timeout=300,
    )


def test_each_benchmark_entry_gets_its_own_record(tmp_path, fake_smi):
    repo = make_repo(tmp_path / "proj")
    write_script(repo / "test_tiny.py", TESTS)
    git(repo, "add", "test_tiny.py")
    git(repo, "commit", "-q", "-m", "benchmarks")
    out = tmp_path / "bench.json"
    r = run_pytest(repo, script_env(fake_smi, torch=False), f"--benchmark-json={out}", "test_tiny.py")
    assert r.returncode == 0, r.stdout + r.stderr
    doc = load(out)
    benches = doc["benchmarks"]
    assert sorted(b["fullname"] for b in benches) == ["test_tiny.py::test_sum[1000]", "test_tiny.py::test_sum[100]"]
    records = [b["provenance"] for b in benches]
    for b, rec in zip(benches, records):
        # pytest's root directory is the repository recorded, whatever __main__ is (pytest's own module).
        assert rec["git"]["commit"] == git(repo, "rev-parse", "HEAD")
        assert rec["git"]["dirty"] is False
        assert rec["interrupted"] is False
        for key in ("time_utc", "python", "torch", "cuda", "cudnn", "gpu_name", "driver", "cpu_count", "before",
                    "during", "monitored_s", "after"):
            assert key in rec, key
        assert rec["gpu_backend"]["backend"] == "nvidia-smi"
        # The record's region holds the benchmark's rounds: at least their total time.
        assert rec["monitored_s"] + 0.001 >= b["stats"]["total"], (rec["monitored_s"], b["stats"]["total"])
    # One record per benchmark, not one shared: the first benchmark's ended before the second's began.
    assert records[0]["finished_utc"] <= records[1]["time_utc"]
    # `provenance show` reads a benchmark's record as any other.
    one = tmp_path / "one.json"
    one.write_text(json.dumps(benches[0]["provenance"]))
    shown = subprocess.run([PROVENANCE, "show", "--json", str(one)], capture_output=True, text=True)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout) == benches[0]["provenance"]


def test_no_json_no_record_and_the_plugin_can_be_turned_off(tmp_path, fake_smi):
    repo = make_repo(tmp_path / "proj")
    write_script(repo / "test_tiny.py", TESTS)
    env = script_env(fake_smi, torch=False)
    # Without a JSON to write, the records would be thrown away: none is made (the fake would log a call).
    log = tmp_path / "smi-calls"
    wrapper = fake_smi / "nvidia-smi"
    real = fake_smi / "nvidia-smi-real"
    wrapper.rename(real)
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nexec "{real}" "$@"\n')
    wrapper.chmod(0o755)
    r = run_pytest(repo, env, "test_tiny.py")
    assert r.returncode == 0, r.stdout + r.stderr
    assert not log.exists()
    out = tmp_path / "bench.json"
    r = run_pytest(repo, env, "-p", "no:kl1_provenance", f"--benchmark-json={out}", "test_tiny.py")
    # Off: its options are gone with it, so they are an error; without them the JSON has no record.
    assert r.returncode != 0 and "kl1-provenance" in r.stderr
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:kl1_provenance",
                        "--benchmark-max-time=0.05", f"--benchmark-json={out}", "test_tiny.py"],
                       cwd=repo, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert all("provenance" not in b for b in load(out)["benchmarks"])
    assert not log.exists()


def test_provenance_diff_judges_each_benchmark_of_two_real_runs(tmp_path, fake_smi):
    """Two real pytest-benchmark runs of the same benchmarks: `provenance diff` gives one verdict row per
    benchmark (issue 44), from the saved rounds when pytest-benchmark kept them, with the records'
    comparability; the same code and machine are comparable."""
    repo = make_repo(tmp_path / "proj")
    write_script(repo / "test_tiny.py", TESTS)
    git(repo, "add", "test_tiny.py")
    git(repo, "commit", "-q", "-m", "benchmarks")
    outs = [tmp_path / "a.json", tmp_path / "b.json"]
    for out in outs:
        r = run_pytest(repo, script_env(fake_smi, torch=False), f"--benchmark-json={out}",
                       "--benchmark-save-data", "test_tiny.py")
        assert r.returncode == 0, r.stdout + r.stderr
    d = subprocess.run([PROVENANCE, "diff", "--json", str(outs[0]), str(outs[1])],
                       capture_output=True, text=True)
    assert d.returncode == 0, d.stderr
    rows = [json.loads(line) for line in d.stdout.splitlines()]
    verdicts = {r["name"]: r for r in rows if r["kind"] == "verdict"}
    assert sorted(verdicts) == ["test_tiny.py::test_sum[1000]", "test_tiny.py::test_sum[100]"]
    stats = {b["fullname"]: b["stats"] for b in load(outs[0])["benchmarks"]}
    for name, row in verdicts.items():
        assert row["metric"] == "benchmark"
        assert row["verdict"] in ("faster", "slower", "unchanged", "inconclusive")
        # From the saved rounds when kept, else from the stated stats (and the row says so).
        if stats[name].get("data"):
            assert row["n_old"] == len(stats[name]["data"])
        else:
            assert row["n_old"] == stats[name]["rounds"]
            assert any("stated rounds" in x for x in row["reasons"]), row
        if row["ci_low_pct"] is not None:
            assert row["ci_low_pct"] <= row["delta_pct"] <= row["ci_high_pct"], row
        # Comparable unless a record raised a flag that disqualifies (the fake nvidia-smi reports a power cap;
        # a loaded host is flagged) or the records differ in what decides; every such reason is in the row.
        flagged = ("OLD run flagged", "NEW run flagged")
        against = [x for x in row["reasons"]
                   if x.startswith(flagged) or (" → " in x and not x.startswith("noted:"))]
        assert row["comparable"] is (not against), row["reasons"]
