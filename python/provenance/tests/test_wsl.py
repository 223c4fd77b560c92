"""The seed's WSL probe: Windows' CPU load read through powershell.exe (about two seconds of CPU each time), so
only before and after the timed region, never inside it. Run on a Linux machine made to look like WSL
(`WSL_DISTRO_NAME`, one of the signals the record's environment probe reads) with a fake `powershell.exe`
that logs when it ran and takes 0.4 s."""

import json

from conftest import load, run_script, script_env, write_script

# Each call logs "start end" (wall clock, s) and prints the next load: 3 % before, 40 % after.
FAKE_POWERSHELL = """#!/bin/sh
start=$(date +%s.%N)
n=$(cat "{log}" 2>/dev/null | wc -l)
sleep 0.4
echo "$start $(date +%s.%N)" >> "{log}"
if [ "$n" -eq 0 ]; then echo 3; else echo 40; fi
"""

SCRIPT = """
    import json, sys, time
    from kl1_provenance import Provenance
    prov = Provenance(interval_ms=100, backend="nvidia-smi").start()
    region_start = time.time()
    deadline = time.monotonic() + 60
    while prov.gpu_samples < 4 and time.monotonic() < deadline:
        time.sleep(0.02)
    region_end = time.time()
    rec = prov.finish()
    open(sys.argv[1], "w").write(json.dumps({"record": rec, "region": [region_start, region_end]}))
"""


def test_windows_cpu_is_read_before_and_after_never_inside_the_region(tmp_path, fake_smi):
    log = tmp_path / "powershell-calls"
    ps = fake_smi / "powershell.exe"
    ps.write_text(FAKE_POWERSHELL.format(log=log))
    ps.chmod(0o755)
    script = write_script(tmp_path / "bench.py", SCRIPT)
    out = tmp_path / "out.json"
    run_script(script, str(out), cwd=tmp_path, env=script_env(fake_smi, torch=False, WSL_DISTRO_NAME="FakeDistro"))
    doc = load(out)
    rec, (region_start, region_end) = doc["record"], doc["region"]
    assert rec["environment"]["class"] == "wsl", json.dumps(rec["environment"])

    # The seed's keys: Windows' CPU % in before and after, as powershell.exe printed it.
    assert rec["before"]["windows_cpu_percent"] == 3.0
    assert rec["after"]["windows_cpu_percent"] == 40.0
    # 40 % is at or above the busy threshold (25 %): the verdict says so, naming the reading.
    busy = [f for f in rec["verdict"]["flags"] if f["flag"] == "windows_cpu_busy"]
    assert [f["evidence"] for f in busy] == ["Windows CPU 40 % after (threshold 25 %)"], rec["verdict"]["flags"]

    # Two calls, each wholly outside the script's region: one ended before start() returned, one began
    # after finish() was called.
    calls = [tuple(map(float, line.split())) for line in log.read_text().splitlines()]
    assert len(calls) == 2, calls
    (b0, b1), (a0, a1) = calls
    assert b1 <= region_start, (calls, region_start)
    assert a0 >= region_end, (calls, region_end)
    # Their 0.4 s each are the recorder's cost, not the region's: monitored_s is the region (from the
    # monitor's start, just before start() returned, to finish()), well under region + 0.4 s.
    region_s = region_end - region_start
    assert rec["monitored_s"] < region_s + 0.3, (rec["monitored_s"], region_s)
    assert rec["recorder_s"]["start"] >= 0.4 and rec["recorder_s"]["finish"] >= 0.4, rec["recorder_s"]
