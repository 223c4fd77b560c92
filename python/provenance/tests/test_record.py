"""The record a Python benchmark gets, key by key against the seed tool's code (000_…txt, a Python
`Provenance` class): what each key meant there is written out here as the seed computed it, and compared
with ours. Then: the record is what `provenance show` reads, versions come from the running interpreter
(torch only when the script imported it), and the repository is the script's."""

import json
import platform
import re
import statistics
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone

import pytest

import kl1_provenance
from conftest import PROVENANCE, git, load, make_repo, run_script, script_env, write_script

# The seed's GPU query, in its order, and the numeric fields it summarised.
SEED_GPU_FIELDS = ["pstate", "clocks.sm", "clocks.mem", "temperature.gpu", "power.draw", "utilization.gpu",
                   "memory.used", "clocks_throttle_reasons.active"]
SEED_NUMERIC = ["clocks.sm", "clocks.mem", "temperature.gpu", "power.draw", "utilization.gpu", "memory.used"]
SEED_BUSY_UTIL = 10
SEED_THROTTLE_BITS = [(0x1, "gpu_idle"), (0x2, "applications_clocks_setting"), (0x4, "sw_power_cap"),
                      (0x8, "hw_slowdown"), (0x10, "sync_boost"), (0x20, "sw_thermal_slowdown"),
                      (0x40, "hw_thermal_slowdown"), (0x80, "hw_power_brake_slowdown"),
                      (0x100, "display_clock_setting")]

# GPU 0's line at tick 0 of the fake nvidia-smi (nvidia-smi-normal.sh): what a one-shot reading returns.
# The fake answers gpu-monitor's query, which puts index and uuid first; the seed's query had the rest.
FAKE_GPU0_TICK0 = "0, GPU-fake-0000, P0, 1980, 2619, 60, 650.50, 97, 70123, 0x0000000000000004"


def seed_parse_gpu_line(values):
    """The seed's parse_gpu_line: N/A → None, pstate text, the throttle mask from hex, the rest floats."""
    out = {}
    for k, v in zip(SEED_GPU_FIELDS, [p.strip() for p in values]):
        if v in ("[N/A]", "N/A", "[Not Supported]", ""):
            out[k] = None
        elif k == "pstate":
            out[k] = v
        elif k == "clocks_throttle_reasons.active":
            out[k] = int(v, 16)
        else:
            out[k] = float(v)
    return out


def seed_decode_throttle(mask):
    names = [name for bit, name in SEED_THROTTLE_BITS if mask & bit]
    rest = mask & ~sum(b for b, _ in SEED_THROTTLE_BITS)
    return names + ([f"unknown_0x{rest:x}"] if rest else [])


def seed_summarize(samples):
    """The seed's summarize over one stream of readings (every GPU's lines pooled, as its one `nvidia-smi -lms`
    gave them): min / median / max per numeric field, the SM clock while busy, throttle reasons, pstates."""
    out = {"n_samples": len(samples)}
    for k in SEED_NUMERIC:
        vals = [s[k] for s in samples if s.get(k) is not None]
        out[k] = {"min": min(vals), "median": statistics.median(vals), "max": max(vals)} if vals else None
    busy = [s["clocks.sm"] for s in samples
            if s.get("clocks.sm") is not None and (s.get("utilization.gpu") or 0) >= SEED_BUSY_UTIL]
    out["clocks.sm_busy"] = ({"min": min(busy), "median": statistics.median(busy), "max": max(busy),
                              "n": len(busy)} if busy else None)
    mask = 0
    for s in samples:
        mask |= s.get("clocks_throttle_reasons.active") or 0
    out["throttle_reasons_seen"] = seed_decode_throttle(mask)
    out["pstates_seen"] = sorted({s["pstate"] for s in samples if s.get("pstate")})
    return out


BENCH = """
    import json, os, platform, sys, time
    {import_torch}
    from kl1_provenance import Provenance, claim_output

    out = claim_output(sys.argv[1])                         # the seed's first line: at startup
    prov = Provenance(interval_ms=100, backend="nvidia-smi", weights="fp32 + bf16 autocast"{extra}).start()
    t0 = time.perf_counter()
    deadline = time.monotonic() + 60
    while prov.gpu_samples < 8 and time.monotonic() < deadline:    # the "timed runs"
        time.sleep(0.02)
    region_s = time.perf_counter() - t0
    json_out = {{"tokens_per_s": 1234.5}}
    json_out["provenance"] = prov.finish()                  # the seed's third line
    json_out["seen_by_script"] = {{
        "python": platform.python_version(), "cpu_count": os.cpu_count(), "region_s": region_s,
        "torch_in_sys_modules": "torch" in sys.modules,
    }}
    out.write_json(json_out)
"""


@pytest.fixture
def seed_style_run(tmp_path, fake_smi):
    """The seed's three lines in a benchmark script inside a git repository with a modified tracked file
    and an untracked one, run from another directory."""
    repo = make_repo(tmp_path / "repo")
    (repo / "a.txt").write_text("alpha, edited\n")
    (repo / "untracked.txt").write_text("not counted\n")
    script = write_script(repo / "bench.py", BENCH.format(import_torch="import torch", extra=""))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = tmp_path / "result.json"
    started = datetime.now(timezone.utc)
    run_script(script, str(result), cwd=elsewhere, env=script_env(fake_smi))
    ended = datetime.now(timezone.utc)
    return repo, load(result), started, ended, result


def test_every_seed_key_is_there_with_the_seeds_meaning(seed_style_run):
    repo, out, started, ended, _ = seed_style_run
    rec, seen = out["provenance"], out["seen_by_script"]

    # time_utc: datetime.now(timezone.utc).isoformat(timespec="seconds"), at the record's start.
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", rec["time_utc"]), rec["time_utc"]
    t = datetime.fromisoformat(rec["time_utc"])
    assert started - timedelta(seconds=1) <= t <= ended

    # git: {"commit": `git rev-parse HEAD`, "dirty": bool(`git status --porcelain --untracked-files=no`)},
    # in the script's repository (not the current directory).
    assert rec["git"]["commit"] == git(repo, "rev-parse", "HEAD")
    assert rec["git"]["dirty"] is bool(git(repo, "status", "--porcelain", "--untracked-files=no"))
    assert rec["git"]["dirty"] is True
    assert rec["git"]["modified"] == ["a.txt"]  # the untracked file does not count, as in the seed

    # python: platform.python_version(); torch / cuda / cudnn / gpu_name: the imported torch's answers.
    assert rec["python"] == seen["python"] == platform.python_version()
    assert rec["torch"] == "2.5.1+fake"                   # torch.__version__
    assert rec["cuda"] == "12.4"                          # torch.version.cuda
    assert rec["cudnn"] == 90100                          # torch.backends.cudnn.version(), an int as torch gives
    assert rec["gpu_name"] == "Fake Device from torch"    # torch.cuda.get_device_name(), not the monitor's

    # driver: nvidia-smi's driver_version (the fake's identity line); cpu_count: os.cpu_count().
    assert rec["driver"] == "550.54.15"
    assert rec["cpu_count"] == seen["cpu_count"]

    # The caller's fields, at the top level.
    assert rec["weights"] == "fp32 + bf16 autocast"

    # before / after: {"gpu": one reading of the first GPU, "wsl_loadavg_1m", "windows_cpu_percent"}.
    expected_gpu = seed_parse_gpu_line(FAKE_GPU0_TICK0.split(",")[2:])
    for when in ("before", "after"):
        snap = rec[when]
        assert {k: snap["gpu"][k] for k in SEED_GPU_FIELDS} == expected_gpu, when
        assert isinstance(snap["wsl_loadavg_1m"], float) and snap["wsl_loadavg_1m"] >= 0
        assert snap["wsl_loadavg_1m"] == snap["loadavg"]["1m"]
        # powershell.exe exists only on WSL: None, and the record says why.
        assert snap["windows_cpu_percent"] is None
        assert rec["unavailable"][f"{when}.windows_cpu_percent"] == "not WSL"

    # monitored_s: seconds from the monitor's start to finish(); the script's own region lies inside it.
    assert seen["region_s"] <= rec["monitored_s"] + 0.001
    assert rec["monitored_s"] <= seen["region_s"] + rec["recorder_s"]["start"] + 0.5

    # during: the seed's summarize() over the readings, computed here from the readings themselves.
    during = rec["during"]
    readings = during["timeline"]["samples"]
    assert during["timeline"]["every"] == 1 and len(readings) >= 8
    expected = seed_summarize(readings)
    for k, v in expected.items():
        assert during[k] == v, k
    # The fake alternates busy and idle on two GPUs: both states were seen.
    assert expected["pstates_seen"] == ["P0", "P8"]
    assert expected["throttle_reasons_seen"] == ["gpu_idle", "sw_power_cap"]
    assert {s["index"] for s in readings} == {0, 1}
    # during.wsl_loadavg_1m: {min, max} of the one-minute load over the region.
    w = during["wsl_loadavg_1m"]
    assert 0 <= w["min"] <= w["max"]

    # torch was the script's; the module did not import anything of it.
    assert seen["torch_in_sys_modules"] is True


def test_the_record_adds_the_crates_keys(seed_style_run):
    _, out, _, _, _ = seed_style_run
    rec = out["provenance"]
    assert rec["schema_version"] == kl1_provenance.SCHEMA_VERSION
    assert [g["index"] for g in rec["during"]["gpus"]] == [0, 1]   # per GPU, with the seed's keys inside
    assert rec["during"]["region_coverage"]["sufficient"] is True
    assert rec["gpu_backend"]["backend"] == "nvidia-smi"
    assert {g["name"] for g in rec["gpus"]} == {"NVIDIA H200"}      # the monitor's identity, beside torch's
    assert rec["environment"]["class"] in ("bare_metal", "vm", "container", "wsl", "unknown")
    assert "loadavg_1m" in rec["during"]["host"]
    v = rec["verdict"]
    # The fake GPU 0 is power capped in half its readings and busy in the before reading: both flagged,
    # as is the edited tracked file. (A loaded test machine may add host_load_above_cores; nothing else.)
    flags = [f["flag"] for f in v["flags"] if f["flag"] != "host_load_above_cores"]
    assert flags == ["throttled", "gpu_busy_before_start", "dirty_tree"], v
    # A script has no debug/release build of its own: the check says why it was not made.
    debug = [u for u in v["unchecked"] if u["check"] == "debug_build"]
    assert debug and "script" in debug[0]["reason"], v["unchecked"]
    # The record's keys come in the documented order: the seed's first, after the version.
    keys = list(rec)
    assert keys[:12] == ["schema_version", "time_utc", "finished_utc", "git", "python", "torch", "cuda", "cudnn",
                         "gpu_name", "driver", "cpu_count", "weights"]
    assert keys[-1] == "unavailable"


def test_provenance_show_reads_the_same_record(seed_style_run, tmp_path):
    _, out, _, _, result = seed_style_run
    rec = out["provenance"]
    # The result file holds the record under "provenance", as the seed's users keep it; `show --json` finds
    # it there and prints it: equal to the dict finish() returned, after a round trip through JSON.
    shown = subprocess.run([PROVENANCE, "show", "--json", str(result)], capture_output=True, text=True)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout) == rec
    # The dict dumped on its own reads the same.
    alone = tmp_path / "record.json"
    alone.write_text(json.dumps(rec))
    shown_alone = subprocess.run([PROVENANCE, "show", "--json", str(alone)], capture_output=True, text=True)
    assert json.loads(shown_alone.stdout) == rec
    text = subprocess.run([PROVENANCE, "show", str(result)], capture_output=True, text=True, check=True).stdout
    build = next(line for line in text.splitlines() if line.startswith("build"))
    for part in (f"python {rec['python']}", "torch 2.5.1+fake", "cuda 12.4", "cudnn 90100"):
        assert part in build, build
    assert "weights" in text and "fp32 + bf16 autocast" in text
    # Nothing differs between a record and itself.
    same = subprocess.run([PROVENANCE, "diff", str(result), str(result)], capture_output=True, text=True)
    assert same.returncode == 0, same.stdout + same.stderr


def test_a_different_torch_is_a_listed_difference(seed_style_run, tmp_path):
    _, out, _, _, result = seed_style_run
    other = dict(out["provenance"], torch="2.6.0+fake")
    b = tmp_path / "b.json"
    b.write_text(json.dumps(other))
    d = subprocess.run([PROVENANCE, "diff", "--json", str(result), str(b)], capture_output=True, text=True)
    assert d.returncode == 1, d.stdout + d.stderr
    changes = json.loads(d.stdout)
    changes = changes["changes"] if isinstance(changes, dict) else changes
    torch = [c for c in changes if c.get("what") == "torch"]
    assert torch and torch[0]["a"] == "2.5.1+fake" and torch[0]["b"] == "2.6.0+fake", changes


def test_without_torch_imported_torch_is_never_imported_and_the_keys_say_why(tmp_path, fake_smi):
    repo = make_repo(tmp_path / "repo")
    script = write_script(repo / "bench.py", BENCH.format(import_torch="", extra=""))
    result = tmp_path / "result.json"
    # The fake torch is importable: the module must still leave it alone.
    run_script(script, str(result), cwd=tmp_path, env=script_env(fake_smi, torch=True))
    out = load(result)
    rec = out["provenance"]
    assert out["seen_by_script"]["torch_in_sys_modules"] is False
    for k in ("torch", "cuda", "cudnn"):
        assert rec[k] is None
        assert rec["unavailable"][k] == "torch not imported"
    assert rec["python"] == platform.python_version()
    # No torch to ask: gpu_name is the first GPU in use, the monitor's, as in any record.
    assert rec["gpu_name"] == "NVIDIA H200"
    assert rec["git"]["dirty"] is False  # bench.py is untracked: not counted, as in the seed


def test_a_cpu_only_torch_gives_no_gpu_name_whatever_gpu_the_machine_has(tmp_path, fake_smi):
    repo = make_repo(tmp_path / "repo")
    script = write_script(repo / "bench.py", BENCH.format(import_torch="import torch", extra=""))
    result = tmp_path / "result.json"
    run_script(script, str(result), cwd=tmp_path, env=script_env(fake_smi, FAKE_TORCH="cpu"))
    rec = load(result)["provenance"]
    assert rec["torch"] == "2.5.1+cpu"
    assert rec["cuda"] is None and "without CUDA" in rec["unavailable"]["cuda"]
    assert rec["cudnn"] is None and "is_available() is False" in rec["unavailable"]["cudnn"]
    # The seed: `torch.cuda.get_device_name() if torch.cuda.is_available() else None`.
    assert rec["gpu_name"] is None and "CPU" in rec["unavailable"]["gpu_name"]


def test_torch_whose_cuda_is_not_initialised_is_not_initialised_for_the_script(tmp_path, fake_smi):
    # The seed called torch.cuda.get_device_name() unconditionally; in real torch that initialises CUDA (a
    # context on the GPU, seconds). A script that has not touched CUDA yet is left as it was: gpu_name says
    # why it is missing, and the device name was never asked.
    script = write_script(tmp_path / "bench.py", """
        import json, sys
        import torch
        from kl1_provenance import Provenance
        rec = Provenance(interval_ms=100, backend="nvidia-smi").start().finish()
        open(sys.argv[1], "w").write(json.dumps({"record": rec, "calls": torch.cuda.device_name_calls}))
    """)
    out = tmp_path / "out.json"
    run_script(script, str(out), cwd=tmp_path, env=script_env(fake_smi, FAKE_TORCH="uninit"))
    doc = load(out)
    rec = doc["record"]
    assert doc["calls"] == 0
    assert rec["torch"] == "2.5.1+fake" and rec["cuda"] == "12.4" and rec["cudnn"] == 90100
    assert rec["gpu_name"] is None
    assert "is_initialized() is False" in rec["unavailable"]["gpu_name"], rec["unavailable"]


def test_repo_dir_names_another_repository(tmp_path, fake_smi):
    repo = make_repo(tmp_path / "repo")
    other = make_repo(tmp_path / "other")
    (other / "b.txt").write_text("beta\n")
    git(other, "add", "b.txt")
    git(other, "commit", "-q", "-m", "second")
    script = write_script(repo / "bench.py",
                          BENCH.format(import_torch="", extra=f", repo_dir={str(other)!r}"))
    result = tmp_path / "result.json"
    run_script(script, str(result), cwd=tmp_path, env=script_env(fake_smi))
    rec = load(result)["provenance"]
    assert rec["git"]["commit"] == git(other, "rev-parse", "HEAD") != git(repo, "rev-parse", "HEAD")
    assert rec["git"]["dir"] == str(other)


def test_fields_are_checked_where_they_are_given():
    with pytest.raises(ValueError, match="git"):
        kl1_provenance.Provenance(git="x")          # one of the record's own keys
    with pytest.raises(ValueError, match="torch"):
        kl1_provenance.Provenance(torch="2.4")      # the interpreter's key: one source
    with pytest.raises(ValueError, match="NaN|nan"):
        kl1_provenance.Provenance(tps=float("nan"))
    with pytest.raises(TypeError, match="when"):
        kl1_provenance.Provenance(when=datetime.now())
    with pytest.raises(ValueError, match="64 bits"):
        kl1_provenance.Provenance(big=2**70)
    with pytest.raises(ValueError, match="interval_ms"):
        kl1_provenance.Provenance(interval_ms=0).start()
    with pytest.raises(ValueError, match="backend|expected"):
        kl1_provenance.Provenance(backend="cuda-magic").start()
    # A field name that is also an option's goes through fields=.
    p = kl1_provenance.Provenance(fields={"backend": "vllm"}, nested={"a": [1, 2.5, None, True]})
    assert p._fields == {"backend": "vllm", "nested": {"a": [1, 2.5, None, True]}}


def test_start_finish_and_the_context_manager_in_process(tmp_path, fake_smi, monkeypatch):
    monkeypatch.setenv("PATH", f"{fake_smi}:{__import__('os').environ['PATH']}")
    with kl1_provenance.Provenance(interval_ms=100, backend="nvidia-smi", repo_dir=tmp_path, run=1) as prov:
        prov.field("tokens_per_s", 99.5)
        assert prov.record is None
    rec = prov.record
    assert rec["run"] == 1 and rec["tokens_per_s"] == 99.5 and rec["interrupted"] is False
    assert prov.finish() is rec                      # a second finish returns the same record
    with pytest.raises(RuntimeError):
        prov.start()                                 # one region per Provenance
    with pytest.raises(RuntimeError):
        kl1_provenance.Provenance().finish()         # finish before start
    json.dumps(rec, allow_nan=False)                 # plain JSON, NaN nowhere
    # An exception other than KeyboardInterrupt ends the region without marking it interrupted, and goes on.
    with pytest.raises(ZeroDivisionError):
        with kl1_provenance.Provenance(interval_ms=100, backend="nvidia-smi", repo_dir=tmp_path) as p2:
            1 / 0
    assert p2.record["interrupted"] is False
    # A KeyboardInterrupt raised in the region marks it interrupted, and goes on.
    with pytest.raises(KeyboardInterrupt):
        with kl1_provenance.Provenance(interval_ms=100, backend="nvidia-smi", repo_dir=tmp_path) as p3:
            raise KeyboardInterrupt
    assert p3.record["interrupted"] is True
    assert "interrupted" in [f["flag"] for f in p3.record["verdict"]["flags"]]
