"""What a running provenance record costs the benchmark's own Python thread: a fixed pure-Python workload
timed in rounds, with no record and inside a running record (the GPU monitor sampling on its native threads),
the two alternating and their order swapped every round so that drifting machine load falls on both alike.
MEASURED: wall time (perf_counter) and the main thread's own CPU time (thread_time), medians and minima.
The CPU time is what the thread itself did: a monitor that made it do work (GIL hand-offs, Python
callbacks) would raise it. The wall time also holds waiting: for the GIL, and for a core, which on a loaded
machine the monitor's own threads compete for like any other process.

    python python/provenance/tests/bench_overhead.py [--backend nvidia-smi] [--interval-ms 500] [--rounds 12]

With no GPU, put a fake nvidia-smi first on PATH (tests/python-provenance uses the Rust tests' one:
crates/gpu-monitor/tests/fixtures/nvidia-smi-normal.sh with fake-common.sh beside it), or give
`--backend replay:crates/gpu-monitor/tests/fixtures/replay.jsonl`.
"""

import argparse
import statistics
import time

from kl1_provenance import Provenance


def workload(n: int) -> int:
    acc = 0
    for i in range(n):
        acc = (acc * 31 + i) % 1_000_003
    return acc


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default=None)
    ap.add_argument("--interval-ms", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--n", type=int, default=4_000_000)
    a = ap.parse_args()
    workload(a.n)  # warm-up
    wall = {"no record": [], "inside a record": []}
    cpu = {"no record": [], "inside a record": []}
    samples = 0
    for r in range(a.rounds):
        for kind in (("no record", "inside a record") if r % 2 == 0 else ("inside a record", "no record")):
            prov = None
            if kind == "inside a record":
                prov = Provenance(a.interval_ms, backend=a.backend, windows_load=False).start()
            t0, c0 = time.perf_counter(), time.thread_time()
            workload(a.n)
            wall[kind].append(time.perf_counter() - t0)
            cpu[kind].append(time.thread_time() - c0)
            if prov is not None:
                samples += prov.gpu_samples
                prov.finish()
    print(f"workload {a.n} iterations, {a.rounds} rounds each, alternating; monitor every {a.interval_ms} ms "
          f"({samples} GPU readings during the recorded rounds)")
    for kind in wall:
        w, c = wall[kind], cpu[kind]
        print(f"  {kind + ':':17} wall median {statistics.median(w) * 1000:8.2f} ms (min {min(w) * 1000:8.2f}); "
              f"main thread CPU median {statistics.median(c) * 1000:8.2f} ms (min {min(c) * 1000:8.2f})")
    ratio = lambda f, d: f(d["inside a record"]) / f(d["no record"])  # noqa: E731
    print(f"  inside / none:    wall median {ratio(statistics.median, wall):.4f}, min {ratio(min, wall):.4f}; "
          f"CPU median {ratio(statistics.median, cpu):.4f}, min {ratio(min, cpu):.4f}")


if __name__ == "__main__":
    main()
