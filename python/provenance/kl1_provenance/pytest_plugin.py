"""pytest plugin (entry point `kl1_provenance`, under `pytest11`): each pytest-benchmark benchmark gets its
own provenance record, written into the benchmark's entry of pytest-benchmark's JSON
(`benchmarks[i]["provenance"]`), where Python benchmark numbers are kept.

A record is made only when pytest-benchmark will write a JSON (`--benchmark-json`, `--benchmark-save`,
`--benchmark-autosave`): otherwise it would be thrown away. Each benchmark test's call is the record's timed
region (the calibration, warm-up and rounds pytest-benchmark runs inside it); its git state is that of
pytest's root directory. Off with `-p no:kl1_provenance`; `--kl1-provenance-interval-ms N` sets the GPU
sampling interval (default 500, the seed's), `--kl1-provenance-backend B` the monitor's backend. Without pytest-benchmark installed the plugin does nothing.
"""

from __future__ import annotations

from typing import Any, Dict

import pytest

from . import Provenance

_RECORDS = pytest.StashKey[Dict[str, Dict[str, Any]]]()


def pytest_addoption(parser):
    group = parser.getgroup("kl1_provenance", "provenance records for pytest-benchmark")
    group.addoption(
        "--kl1-provenance-interval-ms",
        type=int,
        default=500,
        help="GPU sampling interval of each benchmark's provenance record, ms (default 500)",
    )
    group.addoption(
        "--kl1-provenance-backend",
        default=None,
        help="GPU monitor backend of the records: auto (default), nvml, nvidia-smi, replay:FILE",
    )


def _writes_json(config) -> bool:
    """Whether pytest-benchmark will write a JSON this session (and benchmarks run at all)."""
    opt = lambda name: config.getoption(name, default=None)  # noqa: E731 (None without pytest-benchmark)
    if opt("benchmark_disable") and not opt("benchmark_enable"):
        return False
    return bool(opt("benchmark_json") or opt("benchmark_save") or opt("benchmark_autosave"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    if "benchmark" not in getattr(item, "fixturenames", ()) or not _writes_json(item.config):
        return (yield)
    prov = Provenance(
        item.config.getoption("kl1_provenance_interval_ms"),
        repo_dir=item.config.rootpath,
        backend=item.config.getoption("kl1_provenance_backend"),
    )
    try:
        # A KeyboardInterrupt in the test finishes the record marked interrupted and goes on.
        with prov:
            return (yield)
    finally:
        if prov.record is not None:
            item.config.stash.setdefault(_RECORDS, {})[item.nodeid] = prov.record


@pytest.hookimpl(optionalhook=True)
def pytest_benchmark_update_json(config, benchmarks, output_json):
    """pytest-benchmark's hook: each benchmark entry (matched by `fullname`, the test's node id) gets the
    record of its own run."""
    records = config.stash.get(_RECORDS, {})
    for bench in output_json.get("benchmarks", []):
        record = records.get(bench.get("fullname"))
        if record is not None:
            bench["provenance"] = record
