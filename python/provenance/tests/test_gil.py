"""The benchmark's Python thread pays nothing for the record: `start()` and `finish()` release the GIL while
they wait (measured as python/tests does for kineto_trace: a ticker thread's longest pause during the call,
against a control call that holds the GIL), and the GPU monitor's threads never need the GIL: they go on
sampling while the main thread holds it."""

import os
import shutil
import threading
import time

import pytest

from kl1_provenance import Provenance


@pytest.fixture
def slow_smi(fake_smi):
    """The fake nvidia-smi, each one-shot call 0.2 s slower (a real one takes that and more): start() and
    finish() then wait long enough to measure what other threads do meanwhile."""
    real = fake_smi / "nvidia-smi-fast"
    shutil.move(fake_smi / "nvidia-smi", real)
    wrapper = fake_smi / "nvidia-smi"
    wrapper.write_text(
        "#!/bin/sh\n"
        'case " $* " in *" -lms="*) ;; *) sleep 0.2 ;; esac\n'
        f'exec "{real}" "$@"\n'
    )
    wrapper.chmod(0o755)
    return fake_smi


def longest_pause(call):
    """(longest pause of a ticker thread during `call()`, the call's duration, its result)."""
    stamps = []
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            stamps.append(time.perf_counter())

    th = threading.Thread(target=tick)
    th.start()
    time.sleep(0.05)
    t0 = time.perf_counter()
    result = call()
    t1 = time.perf_counter()
    stop.set()
    th.join()
    inside = [s for s in stamps if t0 <= s <= t1]
    gaps = [b - a for a, b in zip([t0] + inside, inside + [t1])]
    return max(gaps), t1 - t0, result


def hold_gil_for(seconds):
    """A call that holds the GIL throughout: `sum` over a range is one C loop, with no point at which the
    interpreter hands the GIL to another thread."""
    n = 1_000_000
    t0 = time.perf_counter()
    sum(range(n))
    per_item = (time.perf_counter() - t0) / n
    return lambda: sum(range(int(seconds / per_item)))


def test_start_and_finish_release_the_gil(slow_smi, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", f"{slow_smi}{os.pathsep}{os.environ['PATH']}")
    prov = Provenance(interval_ms=100, backend="nvidia-smi", repo_dir=tmp_path)
    start_pause, start_s, _ = longest_pause(prov.start)
    finish_pause, finish_s, rec = longest_pause(prov.finish)
    control_pause, control_s, _ = longest_pause(hold_gil_for(start_s))
    print(f"\nGIL: start() {start_s:.3f} s, ticker's longest pause {start_pause * 1000:.1f} ms "
          f"({start_pause / start_s:.1%}); finish() {finish_s:.3f} s, longest pause {finish_pause * 1000:.1f} ms "
          f"({finish_pause / finish_s:.1%}); control holding the GIL {control_s:.3f} s, longest pause "
          f"{control_pause * 1000:.1f} ms ({control_pause / control_s:.1%})")
    assert rec["gpu_backend"]["backend"] == "nvidia-smi"
    # The control shows the method sees a held GIL: the ticker stops for (nearly) the whole call.
    assert control_pause / control_s > 0.8
    # Released: the ticker keeps running, its longest pause a small part of the call.
    assert start_pause / start_s < 0.5
    assert finish_pause / finish_s < 0.5


def test_the_monitor_samples_while_the_main_thread_holds_the_gil(fake_smi, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", f"{fake_smi}{os.pathsep}{os.environ['PATH']}")
    prov = Provenance(interval_ms=50, backend="nvidia-smi", repo_dir=tmp_path).start()
    deadline = time.monotonic() + 60
    while prov.gpu_samples < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    hold = hold_gil_for(1.0)
    n0 = prov.gpu_samples
    t0 = time.perf_counter()
    hold()  # the GIL held for about a second: a monitor needing it would take no sample meanwhile
    held_s = time.perf_counter() - t0
    n1 = prov.gpu_samples
    rec = prov.finish()
    # Two GPUs every 50 ms: about 40 readings in a second. A monitor that needed the GIL would count none
    # until the hold ended (at most the one or two read as it began).
    expected = held_s / 0.050 * 2
    print(f"\nmonitor while the GIL was held {held_s:.3f} s: {n1 - n0} readings (about {expected:.0f} at 50 ms)")
    assert n1 - n0 >= max(8, expected / 5), (n1 - n0, expected)
    assert rec["during"]["n_samples"] >= n1
