"""Ctrl-C inside the timed region still gives a record, marked interrupted: a real SIGINT sent to a benchmark
script (its own process, so the signal handling is Python's own) once it is in the region, in a `with`
block and with `start()`/`finish()`; and a SIGINT during `start()` itself, which ends the record there."""

import signal
import subprocess
import sys
import time

from conftest import load, script_env, write_script

WITH_BLOCK = """
    import json, sys, time
    from kl1_provenance import Provenance
    prov = Provenance(interval_ms=100, backend="nvidia-smi")
    try:
        with prov:
            print("in the region", flush=True)
            while True:
                time.sleep(0.02)
    except KeyboardInterrupt:
        open(sys.argv[1], "w").write(json.dumps(prov.record))
        raise
"""

START_FINISH = """
    import json, sys, time
    from kl1_provenance import Provenance
    prov = Provenance(interval_ms=100, backend="nvidia-smi").start()
    print("in the region", flush=True)
    try:
        while True:
            time.sleep(0.02)
    except KeyboardInterrupt:
        pass
    open(sys.argv[1], "w").write(json.dumps(prov.finish()))
"""


def default_signals():
    """Runs in the child before exec: SIGINT at its default, as an interactive shell starts a program. A test
    run started from a script's background job inherits SIGINT ignored, and Python then never installs its
    KeyboardInterrupt handler; a Ctrl-C test must not depend on how the test run was started."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_until(script, out, env, line, cwd):
    p = subprocess.Popen([sys.executable, str(script), str(out)], cwd=cwd, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, preexec_fn=default_signals)
    assert p.stdout.readline().strip() == line, p.stderr.read()
    return p


def interrupted_flag(rec):
    return [f for f in rec["verdict"]["flags"] if f["flag"] == "interrupted"]


def sigint_in_the_region(tmp_path, fake_smi, body):
    """Runs the benchmark script `body`, sends it SIGINT once it says it is in the region (and the monitor
    has had 0.3 s to sample), and returns (its exit status, its stderr, the record it wrote)."""
    script = write_script(tmp_path / "bench.py", body)
    out = tmp_path / "record.json"
    p = run_until(script, out, script_env(fake_smi, torch=False), "in the region", tmp_path)
    time.sleep(0.3)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    return p.returncode, err, (load(out) if out.exists() else None)


def test_ctrl_c_in_a_with_block_finishes_the_record_and_goes_on(tmp_path, fake_smi):
    status, err, rec = sigint_in_the_region(tmp_path, fake_smi, WITH_BLOCK)
    # The KeyboardInterrupt went on to the top: Python ends by SIGINT, as a shell expects.
    assert status == -signal.SIGINT, err
    assert "KeyboardInterrupt" in err
    assert rec["interrupted"] is True
    (flag,) = interrupted_flag(rec)
    assert flag["evidence"] == "interrupted by SIGINT (Ctrl-C) during the timed region"
    assert rec["monitored_s"] > 0 and rec["after"]["gpu"] is not None  # finished: after was read


def test_ctrl_c_then_finish_marks_the_record_interrupted(tmp_path, fake_smi):
    status, err, rec = sigint_in_the_region(tmp_path, fake_smi, START_FINISH)
    assert status == 0, err
    assert rec["interrupted"] is True
    (flag,) = interrupted_flag(rec)
    assert flag["evidence"] == "interrupted by SIGINT (Ctrl-C) during the timed region"


def test_a_record_without_ctrl_c_is_not_interrupted_and_sigint_is_handed_back(tmp_path, fake_smi):
    script = write_script(tmp_path / "bench.py", """
        import json, signal, sys
        from kl1_provenance import Provenance
        before = signal.getsignal(signal.SIGINT)
        rec = Provenance(interval_ms=100, backend="nvidia-smi").start().finish()
        assert signal.getsignal(signal.SIGINT) is before, signal.getsignal(signal.SIGINT)
        open(sys.argv[1], "w").write(json.dumps(rec))
    """)
    out = tmp_path / "record.json"
    r = subprocess.run([sys.executable, str(script), str(out)], cwd=tmp_path,
                       env=script_env(fake_smi, torch=False), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    rec = load(out)
    assert rec["interrupted"] is False and not interrupted_flag(rec)


def test_ctrl_c_during_start_ends_the_record_there(tmp_path, fake_smi):
    # A fake nvidia-smi whose identity query says it started, then takes two seconds: SIGINT lands while
    # start() waits for it, with the GIL released.
    real = fake_smi / "nvidia-smi-fast"
    (fake_smi / "nvidia-smi").rename(real)
    marker = tmp_path / "identity-asked"
    slow = fake_smi / "nvidia-smi"
    slow.write_text(
        "#!/bin/sh\n"
        f'case "$*" in *index,uuid,name*) touch "{marker}"; sleep 2 ;; esac\n'
        f'exec "{real}" "$@"\n'
    )
    slow.chmod(0o755)
    script = write_script(tmp_path / "bench.py", """
        import json, sys
        from kl1_provenance import Provenance
        prov = Provenance(interval_ms=100, backend="nvidia-smi")
        try:
            prov.start()
            print("start() returned")
        except KeyboardInterrupt:
            open(sys.argv[1], "w").write(json.dumps(prov.record))
            sys.exit(3)
    """)
    out = tmp_path / "record.json"
    p = subprocess.Popen([sys.executable, str(script), str(out)], cwd=tmp_path,
                         env=script_env(fake_smi, torch=False), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, preexec_fn=default_signals)
    deadline = time.monotonic() + 60
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert marker.exists()
    p.send_signal(signal.SIGINT)
    stdout, err = p.communicate(timeout=60)
    assert p.returncode == 3, stdout + err
    assert "start() returned" not in stdout
    rec = load(out)
    assert rec["interrupted"] is True
    (flag,) = interrupted_flag(rec)
    assert flag["evidence"] == "interrupted by SIGINT (Ctrl-C) while the record was being started"
