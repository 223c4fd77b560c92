#!/usr/bin/env python3
"""Runs docs/parquet.md's DuckDB queries on exported traces and compares them with `kineto`'s JSON.

Usage: check.py --kineto BIN --export BIN --work DIR [--require-shared]

Every query is read from docs/parquet.md (the `-- query: NAME` blocks), so the page cannot drift from
what is checked. Expected values come from the `kineto` binary on the same traces (an independent
path: kineto-trace's own aggregation and rendering, not the Parquet files). Prints one line per check
and ends with 'duckdb: N passed, N failed, N skipped' (the shared corpus's sets, one skip, when it is
absent); exits 1 on any failure.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "parquet.md"
# The version the docs state (`kineto.schema_version` = **N**), which a Rust test holds to
# kineto_tables::SCHEMA_VERSION: the files must carry it.
SCHEMA_VERSION = re.search(r"`kineto.schema_version` = \*\*(\d+)\*\*", DOC.read_text()).group(1)

passed = 0
failed = 0
# The sets run on every core (their time is the export and kineto subprocesses, and DuckDB, all outside
# the GIL); the counts are shared.
counted = threading.Lock()


def check(ok, what):
    global passed, failed
    with counted:
        if ok:
            passed += 1
        else:
            failed += 1
            print(f"FAIL: {what}", flush=True)


def queries():
    text = DOC.read_text()
    out = {}
    for block in re.findall(r"```sql\n(.*?)```", text, re.S):
        m = re.match(r"-- query: (\w+)\n", block)
        if m:
            out[m.group(1)] = block[m.end():]
    need = {"views", "top_kernels", "top_kernels_per_rank", "stragglers", "exposed_comm", "budget",
            "summary", "annotations"}
    missing = need - out.keys()
    if missing:
        sys.exit(f"check.py: docs/parquet.md lacks the queries {sorted(missing)}")
    return out


def run_json(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"check.py: {' '.join(map(str, cmd))} failed ({r.returncode}): {r.stderr[-2000:]}")
    return [json.loads(line) for line in r.stdout.splitlines() if line.strip()]


def us_to_ns(x):
    # kineto's JSON `_us` floats are ns / 1000 of an integer: round back exactly.
    return round(x * 1000)


def rows(con, sql):
    cur = con.execute(sql)
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


def rank_of(j, fallback):
    return j["rank"] if j.get("rank") is not None else fallback


def check_set(label, inputs, args, qs):
    out = Path(args.work) / label
    cmd = [args.export, "--parquet", str(out), "--overwrite", *map(str, inputs)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"check.py: {' '.join(cmd)} failed ({r.returncode}): {r.stderr[-2000:]}")
    files = [str(p) for p in inputs]
    # A trace without a rank is exported at its position among the inputs; the test sets use at
    # most one such trace per set, so position 0.
    con = duckdb.connect()
    con.execute(qs["views"].replace("DIR", str(out)))

    # File metadata: schema version, encodings, compression.
    for t in ["gpu_ops", "steps", "budget", "families", "annotations"]:
        kv = rows(con, f"SELECT decode(key) AS k, decode(value) AS v FROM parquet_kv_metadata('{out}/{t}/*/*.parquet')")
        versions = {r["v"] for r in kv if r["k"] == "kineto.schema_version"}
        check(versions == {SCHEMA_VERSION}, f"{label} {t}: kineto.schema_version {versions}")
        md = rows(con, f"SELECT path_in_schema AS col, compression, encodings FROM parquet_metadata('{out}/{t}/*/*.parquet')")
        check(all(m["compression"].upper() == "ZSTD" for m in md), f"{label} {t}: every column chunk zstd")
        for col in ("name", "family", "bucket", "annotation"):
            chunks = [m for m in md if m["col"] == col]
            if chunks:
                check(all("DICTIONARY" in m["encodings"].upper() for m in chunks),
                      f"{label} {t}.{col}: dictionary-encoded ({chunks[0]['encodings']})")

    # top_kernels_per_rank vs kineto top --by name -n 0.
    top = run_json([args.kineto, "top", "--by", "name", "-n", "0", "--json", *files])
    want = {}
    for j in top:
        want[(rank_of(j, 0), j["name"])] = j
    got = {(r["rank"], r["name"]): r for r in rows(con, qs["top_kernels_per_rank"])}
    check(set(got) == set(want), f"{label} top_kernels_per_rank: same (rank, name) keys "
          f"({len(got)} vs {len(want)}; only in parquet {sorted(set(got) - set(want))[:3]}, "
          f"only in kineto {sorted(set(want) - set(got))[:3]})")
    bad = [k for k in got.keys() & want.keys()
           if (got[k]["count"], got[k]["total_ns"], got[k]["min_ns"], got[k]["max_ns"])
           != (want[k]["count"], want[k]["total_ns"], want[k]["min_ns"], want[k]["max_ns"])
           or abs(got[k]["median_ns"] - want[k]["median_ns"]) > 0.5]
    check(not bad, f"{label} top_kernels_per_rank: count/total/min/max/median equal for {len(got)} groups; differ: {bad[:3]}")

    # top_kernels (across ranks) vs the per-rank outputs summed.
    merged = {}
    for (rank, name), j in want.items():
        m = merged.setdefault(name, {"ranks": set(), "count": 0, "total_ns": 0, "min_ns": None, "max_ns": None})
        m["ranks"].add(rank)
        m["count"] += j["count"]
        m["total_ns"] += j["total_ns"]
        m["min_ns"] = j["min_ns"] if m["min_ns"] is None else min(m["min_ns"], j["min_ns"])
        m["max_ns"] = j["max_ns"] if m["max_ns"] is None else max(m["max_ns"], j["max_ns"])
    order = sorted(merged, key=lambda n: (-merged[n]["total_ns"], n))[:20]
    got_top = rows(con, qs["top_kernels"])
    check([r["name"] for r in got_top] == order, f"{label} top_kernels: the same 20 names in the same order")
    bad = [r["name"] for r in got_top if r["name"] in merged and
           (r["count"], r["total_ns"], r["min_ns"], r["max_ns"], r["ranks"]) !=
           (merged[r["name"]]["count"], merged[r["name"]]["total_ns"], merged[r["name"]]["min_ns"],
            merged[r["name"]]["max_ns"], len(merged[r["name"]]["ranks"]))]
    check(not bad, f"{label} top_kernels: count/total/min/max/ranks equal; differ: {bad[:3]}")

    # budget and exposed_comm vs kineto budget --json.
    bj = run_json([args.kineto, "budget", "--json", *files])
    want_b = {}
    want_c = {}
    for j in bj:
        rank = rank_of(j, 0)
        for bucket, t in j["buckets"].items():
            want_b[(rank, j["step"], bucket)] = (t["exclusive_ns"], t["inclusive_ns"])
        want_c[(rank, j["step"])] = (j["comm_ns"], j["comm_overlapped_ns"], j["comm_exposed_ns"],
                                      j["comm_overlap_pct"])
    got_b = {(r["rank"], r["step"], r["bucket"]): (r["exclusive_ns"], r["inclusive_ns"])
             for r in rows(con, qs["budget"])}
    check(got_b == want_b, f"{label} budget: {len(got_b)} step×bucket rows equal kineto budget's "
          f"{len(want_b)}; differ: {[k for k in got_b.keys() | want_b.keys() if got_b.get(k) != want_b.get(k)][:3]}")
    got_c = {(r["rank"], r["step"]): (r["comm_ns"], r["comm_overlapped_ns"], r["comm_exposed_ns"], r["overlap_pct"])
             for r in rows(con, qs["exposed_comm"])}
    bad = [k for k in got_c.keys() | want_c.keys()
           if k not in got_c or k not in want_c or got_c[k][:3] != want_c[k][:3]
           or (want_c[k][3] is None) != (got_c[k][3] is None)
           or (want_c[k][3] is not None and abs(got_c[k][3] - want_c[k][3]) > 0.05 + 1e-9)]
    check(not bad, f"{label} exposed_comm: comm/overlapped/exposed/pct equal for {len(want_c)} steps; differ: {bad[:3]}")

    # stragglers vs kineto ranks --json (span rows).
    rj = [j for j in run_json([args.kineto, "ranks", "--json", *files]) if j["quantity"] == "span"]
    got_s = {r["step_key"]: r for r in rows(con, qs["stragglers"])}
    check(set(got_s) == {j["step_key"] for j in rj}, f"{label} stragglers: same step keys {sorted(got_s)[:5]} vs {[j['step_key'] for j in rj][:5]}")
    for j in rj:
        g = got_s.get(j["step_key"])
        if g is None:
            continue
        same = (g["ranks"], g["min_span_ns"], g["max_span_ns"]) == (j["ranks"], j["min_ns"], j["max_ns"]) \
            and abs(g["median_span_ns"] - j["median_ns"]) <= 0.5 \
            and abs(g["over_median_ns"] - j["max_over_median_ns"]) <= 0.5
        check(same, f"{label} stragglers step {j['step_key']}: {g} vs {j}")
        maxes = rows(con, f"SELECT count(*) AS n FROM steps WHERE coalesce(CAST(step_number AS VARCHAR), '#' || CAST(step AS VARCHAR)) = '{j['step_key']}' AND span_ns = {j['max_ns']}")
        if maxes[0]["n"] == 1:
            # kineto labels a rank without distributedInfo.rank by its file; the export by position.
            label_of = {str(f): str(i) for i, f in enumerate(files)}
            want_rank = label_of.get(j["max_rank"], j["max_rank"])
            check(str(g["slowest_rank"]) == want_rank,
                  f"{label} stragglers step {j['step_key']}: slowest rank {g['slowest_rank']} vs {want_rank}")

    # summary vs kineto summary --json.
    sj = run_json([args.kineto, "summary", "--json", "--no-sha256", *files])
    got_sum = {r["rank"]: r for r in rows(con, qs["summary"])}
    for j in sj:
        rank = rank_of(j, 0)
        g = got_sum.get(rank)
        if j["kernels"]["count"] + j["memcpy"]["count"] + j["memset"]["count"] == 0:
            check(g is None, f"{label} summary rank {rank}: no GPU op, no row")
            continue
        if g is None:
            check(False, f"{label} summary: rank {rank} missing")
            continue
        w = (j["kernels"]["count"], us_to_ns(j["kernels"].get("sum_us", 0)), us_to_ns(j["kernels"].get("union_us", 0)),
             j["kernels"].get("streams", 0), j["memcpy"]["count"], j["memcpy"].get("bytes", 0), j["memset"]["count"])
        gg = (g["kernels"], g["kernel_sum_ns"], g["kernel_union_ns"], g["kernel_streams"], g["memcpys"],
              g["memcpy_bytes"], g["memsets"])
        check(gg == w, f"{label} summary rank {rank}: (kernels, Σ, union, streams, copies, bytes, fills) {gg} vs kineto {w}")

    # annotations vs kineto annotations --json.
    aj = run_json([args.kineto, "annotations", "--json", *files])
    want_a = {(rank_of(j, 0), j["name"]): (j["count"], j["total_ns"], j["gpu_count"], j["gpu_total_ns"]) for j in aj}
    got_a = {(r["rank"], r["name"]): (r["count"], r["total_ns"], r["gpu_count"], r["gpu_total_ns"])
             for r in rows(con, qs["annotations"])}
    check(got_a == want_a, f"{label} annotations: {len(got_a)} names equal kineto's {len(want_a)}; differ: "
          f"{[(k, got_a.get(k), want_a.get(k)) for k in got_a.keys() | want_a.keys() if got_a.get(k) != want_a.get(k)][:3]}")
    n = rows(con, "SELECT count(*) AS n, count(DISTINCT rank) AS r FROM gpu_ops")[0]
    print(f"ok: {label}: {len(inputs)} traces, {n['n']} GPU ops on {n['r']} ranks", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kineto", required=True)
    ap.add_argument("--export", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--require-shared", action="store_true")
    args = ap.parse_args()
    qs = queries()
    # The project's generated traces, in every clone: two ranks of the demo window (`cargo xtask
    # gen-window`) and server-shaped synthetic traces (testdata/synthetic/make_server_traces.py).
    demo = ROOT / "testdata" / "windows" / "demo"
    synthetic = ROOT / "testdata" / "synthetic" / "server_traces"
    sets = [
        ("demo2", sorted(demo.glob("prof-32k-b1.decode.rank*.pt.trace.json.gz"))),
        ("demo_prefill", [demo / "prof-32k-b1.prefill-early.rank0.pt.trace.json.gz"]),
    ] + [(f"synthetic_{d.name}", [d / f"{d.name}.json"]) for d in sorted(synthetic.iterdir()) if d.is_dir()]
    # The real traces are the shared corpus's (../shared/traces, from other repositories, not copied here).
    skipped = 0
    shared = ROOT.parent / "shared" / "traces" / "param" / "dlrm_kineto"
    if shared.is_dir():
        sets.insert(0, ("dlrm8", sorted(shared.glob("*.json.gz"))))
        # Held out: every other trace of the shared corpus, one set each (those kineto itself
        # refuses, the corpus's bad inputs, are skipped: the export refuses them the same way).
        held_out = sorted(p for p in (ROOT.parent / "shared" / "traces").rglob("*")
                          if p.name.endswith((".json", ".json.gz")) and p.parent != shared)
        def readable(f):
            return subprocess.run([args.kineto, "summary", "--no-sha256", str(f)],
                                  capture_output=True).returncode == 0

        with ThreadPoolExecutor(os.cpu_count()) as pool:
            for f, ok in zip(held_out, pool.map(readable, held_out)):
                if ok:
                    sets.append((f"shared-{len(sets)}-{f.name[:40]}", [f]))
    elif args.require_shared:
        sys.exit(f"check.py: {shared} is required (KL1_REQUIRE_CORPUS) but missing")
    else:
        skipped = 1
        print("skip: the shared corpus's sets: needs ../shared/traces (the shared corpus)", flush=True)
    for label, inputs in sets:
        missing = [p for p in inputs if not Path(p).is_file()]
        if not inputs or missing:
            sys.exit(f"check.py: set {label}: missing traces {missing or 'all'}")
    with ThreadPoolExecutor(os.cpu_count()) as pool:
        # result() re-raises a set's exit or error here.
        for done in [pool.submit(check_set, label, inputs, args, qs) for label, inputs in sets]:
            done.result()
    print(f"duckdb: {passed} passed, {failed} failed, {skipped} skipped", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
