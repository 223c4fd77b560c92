"""What a running provenance record costs the benchmark's own Python thread: a fixed pure-Python workload
timed in rounds, alternately with no record and inside a running record (the GPU monitor sampling on its
native threads), medians compared. MEASURED on the host's perf_counter; the baseline is measured in the same
run, interleaved, so machine load drifts into both alike.

    python python/provenance/tests/bench_overhead.py [--backend nvidia-smi] [--interval-ms 500] [--rounds 9]

With no GPU, put a fake nvidia-smi first on PATH (tests/python-provenance uses the Rust tests' one:
crates/gpu-monitor/tests/fixtures/nvidia-smi-normal.sh with fake-common.sh beside it).
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
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--n", type=int, default=8_000_000)
    a = ap.parse_args()
    workload(a.n)  # warm-up
    bare, recorded = [], []
    samples = 0
    for _ in range(a.rounds):
        t0 = time.perf_counter()
        workload(a.n)
        bare.append(time.perf_counter() - t0)
        prov = Provenance(a.interval_ms, backend=a.backend, windows_load=False).start()
        t0 = time.perf_counter()
        workload(a.n)
        recorded.append(time.perf_counter() - t0)
        samples += prov.gpu_samples
        prov.finish()
    mb, mr = statistics.median(bare), statistics.median(recorded)
    print(f"workload {a.n} iterations, {a.rounds} rounds each, interleaved; monitor every {a.interval_ms} ms "
          f"({samples} GPU readings during the recorded rounds)")
    print(f"  no record:        median {mb * 1000:.2f} ms  (min {min(bare) * 1000:.2f})")
    print(f"  inside a record:  median {mr * 1000:.2f} ms  (min {min(recorded) * 1000:.2f})")
    print(f"  ratio of medians: {mr / mb:.4f}")


if __name__ == "__main__":
    main()
