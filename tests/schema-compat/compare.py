#!/usr/bin/env python3
"""Compares two builds' outputs (tests/schema-compat/outputs.sh BEFORE and AFTER) and allows exactly the
renames and additions that docs/tables.md lists between <!-- renames:begin --> and <!-- renames:end -->.

    python3 tests/schema-compat/compare.py BEFORE AFTER [--docs docs/tables.md]

Text tables, notes on stderr, exit statuses and every other file must be equal byte for byte (the output
directory's own path aside). JSON lines are compared as values (key order is not part of the format) after
the old keys are renamed and the added keys are checked and set aside; CSV rows likewise, by header. The
added values are checked where another output holds them: the new `steps` columns against the old `budget`
rows, the new `budget` step columns against the new `steps` rows, the new kernel columns against the old
Parquet `gpu_ops`, the µs/ns twins against each other. Parquet files (read with pyarrow when it can be
imported, else compared as bytes) must hold the same columns and values, plus the documented additions, and
`kineto.schema_version` 1 → 2. HTML pages must embed the same tool JSON after the same renames and be the same page but for the tables of
the tool's rows (top kernels, roofline steps: they show every scalar key, renamed and added ones too).
Prints one line per difference that is not allowed and a summary; exits 1 if there is any.
"""

import argparse
import csv
import io
import json
import os
import re
import sys

SUFFIXES = ("us", "ns", "rel_us")

# Output files (by name in outputs.sh) → the listing whose renames apply.
LISTINGS = [
    (re.compile(r"^kernels\.(csv|json)$"), "kineto kernels"),
    (re.compile(r"^steps(-whole)?\.(csv|json)$"), "kineto steps"),
    (re.compile(r"^(budget(-whole)?\.(csv|json)|budget--(csv|json)\.out|old\.json|new\.json)$"), "kineto budget"),
    (re.compile(r"^top-[a-z-]+\.(csv|json)$"), "kineto top"),
    (re.compile(r"^(ranks\.(csv|json)|ranks--(csv|json)\.out)$"), "kineto ranks"),
    (re.compile(r"^roofline--(csv|json)\.out$"), "kineto roofline"),
    (re.compile(r"^annotations\.(csv|json)$"), "kineto annotations"),
    (re.compile(r"^(weights--(csv|json)\.out|summary\.json)$"), None),
]


def listing_of(name):
    for pat, listing in LISTINGS:
        if pat.match(name):
            return listing, ("csv" if "csv" in name else "json")
    return None, None


def expand(key):
    """`lo_*` → lo_us, lo_ns, lo_rel_us; anything else → itself."""
    if key.endswith("_*"):
        return [key[:-1] + s for s in SUFFIXES]
    return [key]


def read_renames(path):
    text = open(path, encoding="utf-8").read()
    section = text.split("<!-- renames:begin -->")[1].split("<!-- renames:end -->")[0]
    renames, added = {}, {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or cells[0] in ("where", "") or set(cells[0]) <= {"-"}:
            continue
        where, old, new = cells
        where = where.strip("`")
        # Parentheses explain; the names are outside them. CSV `x` is a name only CSV has.
        new = re.sub(r"\([^)]*\)", "", new)
        news = re.findall(r"(?:(CSV|JSON) )?`([^`]+)`", new)
        if old in ("—", "-", ""):
            added.setdefault(where, []).extend(news)
            continue
        olds = re.findall(r"`([^`]+)`", old)
        assert len(olds) == 1, line
        renames.setdefault(where, []).append((olds[0], [n for _, n in news]))
    return renames, added


def dims(text):
    """`110x1x1` → [110, 1, 1], 0 → None (the new columns are null where the trace has no grid)."""
    parts = [int(p) for p in str(text).split("x")]
    return [p if p != 0 else None for p in parts]


def rename_row(row, renames, form):
    """Old row → its keys under the new names (values as they were, split where a rename splits them)."""
    out = dict(row)
    for old, news in renames:
        if len(news) == 3 and old in ("grid", "block"):
            if old in out:
                v = out.pop(old)
                vals = dims(v)
                for n, x in zip(news, vals):
                    out[n] = x if form == "json" else ("" if x is None else str(x))
            continue
        (new,) = news
        for o, n in zip(expand(old), expand(new)):
            if o in out:
                out[n] = out.pop(o)
    return out


def drop_added(row, added, where, problems, origin, form):
    """Sets the added keys of the new row aside (each must be there); returns them."""
    got = {}
    for only, a in added:
        if only and only.lower() != form:
            continue
        if form == "csv" and a.endswith("_ns"):
            # CSV writes a duration as `X_us` only (the naming rule): an added `X_ns` adds no CSV key.
            continue
        path = a.split(".")
        if len(path) == 1:
            keys = [k for k in expand(a) if k in row]
            if not keys:
                problems.append(f"{origin}: added `{a}` missing")
            for k in keys:
                got[k] = row.pop(k)
        else:
            # `families.*.bucket`: the key in every nested object; `unmatched.bucket`: in that one.
            outer, mid, leaf = (path + [None])[:3] if len(path) == 3 else (path[0], None, path[1])
            obj = row.get(outer)
            if not isinstance(obj, dict):
                continue
            targets = obj.values() if mid == "*" else [obj]
            for t in targets:
                if isinstance(t, dict):
                    for k in expand(leaf):
                        if k in t:
                            got.setdefault(a, []).append(t.pop(k))
    return got


def json_lines(text):
    return [json.loads(l) for l in text.splitlines() if l.strip()]


def csv_rows(text):
    return list(csv.DictReader(io.StringIO(text)))


class Compare:
    def __init__(self, before, after, renames, added):
        self.before, self.after = before, after
        self.renames, self.added = renames, added
        self.problems = []
        # Where each output tree was written (outputs.sh records it in `.root`): paths under it are the
        # tree's own, not output.
        self.roots = [before, after]
        for d in (before, after):
            try:
                self.roots.append(open(os.path.join(d, ".root"), encoding="utf-8").read().strip())
            except OSError:
                pass
        self.roots.sort(key=len, reverse=True)
        self.counts = {"files": 0, "identical": 0, "renamed": 0, "rows": 0}
        self.new_steps = {}
        self.old_budget = {}
        self.new_kernels = {}

    def norm(self, text):
        for root in self.roots:
            text = text.replace(root, "OUT")
        return text

    def listing(self, rel, old, new, where, form):
        ren = self.renames.get(where, [])
        add = self.added.get(where, [])
        if form == "json":
            try:
                o, n = json_lines(old), json_lines(new)
            except json.JSONDecodeError as e:
                self.problems.append(f"{rel}: not JSON lines: {e}")
                return
        else:
            o, n = csv_rows(old), csv_rows(new)
        if len(o) != len(n):
            self.problems.append(f"{rel}: {len(o)} rows before, {len(n)} after")
            return
        for i, (a, b) in enumerate(zip(o, n)):
            self.counts["rows"] += 1
            a = rename_row(a, ren, form)
            extra = drop_added(b, add, where, self.problems, f"{rel} row {i}", form)
            self.check_added(rel, where, form, i, a, b, extra)
            if a != b:
                ka, kb = set(a), set(b)
                diff = sorted(k for k in ka | kb if a.get(k) != b.get(k))
                self.problems.append(f"{rel} row {i}: differs in {diff[:8]}")
                return

    def check_added(self, rel, where, form, i, old, new, extra):
        """The added values against what other columns or outputs say they are."""
        if form != "json":
            return
        if where == "kineto top":
            for k in ("mean", "median", "stddev"):
                if extra.get(f"{k}_ns") is not None and extra[f"{k}_ns"] / 1000.0 != new[f"{k}_us"]:
                    self.problems.append(f"{rel} row {i}: {k}_ns / 1000 != {k}_us")
        if where == "kineto ranks":
            for k in ("median", "max_over_median"):
                if extra[f"{k}_ns"] / 1000.0 != new[f"{k}_us"]:
                    self.problems.append(f"{rel} row {i}: {k}_ns / 1000 != {k}_us")
        if where == "kineto kernels":
            if extra.get("kind") != "kernel" or extra.get("bytes") is not None:
                self.problems.append(f"{rel} row {i}: kind/bytes of a kernel: {extra}")
        if where == "kineto roofline":
            for k in ("weights", "kv"):
                (ns,) = extra.get(f"buckets.{k}_ns", [None])
                us = new.get("buckets", {}).get(f"{k}_us")
                if (ns is None) != (us is None) or (ns is not None and ns / 1000.0 != us):
                    self.problems.append(f"{rel} row {i}: buckets.{k}_ns {ns} vs {k}_us {us}")
        if where == "kineto kernels" and rel.endswith("/kernels.json"):
            self.new_kernels.setdefault(os.path.dirname(rel), []).append(extra.get("launch_ts_ns"))
        if where == "kineto steps" and rel.endswith("/steps.json"):
            self.new_steps.setdefault(os.path.dirname(rel), []).append(dict(new, **extra))
        if where == "kineto budget" and rel.endswith("/budget.json"):
            self.old_budget.setdefault(os.path.dirname(rel), []).append((old, dict(new, **extra)))

    def cross(self):
        """Steps' new columns = the old budget's; budget's new step columns = the new steps'."""
        moved = ["window_lo_us", "window_lo_ns", "window_lo_rel_us", "window_hi_us", "window_hi_ns",
                 "window_hi_rel_us", "span_us", "span_ns", "idle_us", "idle_ns", "comm_us", "comm_ns",
                 "comm_overlapped_us", "comm_overlapped_ns", "comm_exposed_us", "comm_exposed_ns",
                 "comm_overlap_pct"]
        checked = 0
        for d, steps in self.new_steps.items():
            budget = self.old_budget.get(d)
            if budget is None or len(budget) != len(steps):
                continue
            for s, (old_b, new_b) in zip(steps, budget):
                checked += 1
                for k in moved:
                    if s.get(k) != old_b.get(k):
                        self.problems.append(f"{d}: steps `{k}` {s.get(k)} != the old budget's {old_b.get(k)}")
                um = old_b.get("unmatched", {})
                if (s["unmatched_kernels"], s["unmatched_sum_ns"]) != (um.get("count"), um.get("sum_ns")):
                    self.problems.append(f"{d}: steps unmatched != the old budget's unmatched")
                step_part = {k: v for k, v in new_b.items()
                             if k not in ("buckets", "families", "unmatched") and "." not in k}
                if step_part != s:
                    diff = sorted(k for k in set(step_part) | set(s) if step_part.get(k) != s.get(k))
                    self.problems.append(f"{d}: budget's step columns != steps: {diff[:8]}")
        self.counts["cross-checked steps"] = checked
        # Kernels' launch_ts_ns = the old Parquet gpu_ops' for the kernel rows.
        try:
            import pyarrow.parquet as pq
        except ImportError:
            return
        checked = 0
        for d, launches in self.new_kernels.items():
            pdir = os.path.join(self.before, d, "parquet", "gpu_ops")
            files = [os.path.join(r, f) for r, _, fs in os.walk(pdir) for f in fs if f.endswith(".parquet")]
            if len(files) != 1:
                continue
            t = pq.read_table(files[0]).to_pydict()
            want = [ts for k, ts in zip(t["kind"], t["launch_ts_ns"]) if k == "kernel"]
            checked += 1
            if want != launches:
                self.problems.append(f"{d}: kernels launch_ts_ns != the old Parquet gpu_ops'")
        self.counts["cross-checked kernels"] = checked

    def parquet(self, rel, old_path, new_path):
        try:
            import pyarrow.parquet as pq
        except ImportError:
            if open(old_path, "rb").read() != open(new_path, "rb").read():
                self.problems.append(f"{rel}: Parquet differs (pyarrow not available to compare values)")
            return
        a, b = pq.read_table(old_path), pq.read_table(new_path)
        table = rel.split("/parquet/")[1].split("/")[0]
        add = [c for _, c in self.added.get(f"Parquet {table}", [])]
        ma = dict(pq.read_metadata(old_path).metadata or {})
        mb = dict(pq.read_metadata(new_path).metadata or {})
        ma.pop(b"ARROW:schema", None)
        mb.pop(b"ARROW:schema", None)
        if ma.get(b"kineto.schema_version") != b"1" or mb.get(b"kineto.schema_version") != b"2":
            self.problems.append(f"{rel}: schema_version {ma.get(b'kineto.schema_version')} → {mb.get(b'kineto.schema_version')}")
        ma.pop(b"kineto.schema_version", None)
        mb.pop(b"kineto.schema_version", None)
        if ma != mb:
            self.problems.append(f"{rel}: key-value metadata differs")
        missing = [c for c in add if c not in b.column_names]
        if missing:
            self.problems.append(f"{rel}: added columns missing: {missing}")
        kept = [c for c in b.column_names if c not in add]
        if kept != a.column_names:
            self.problems.append(f"{rel}: columns {a.column_names} → {kept} (+ {add})")
            return
        if b.select(kept).schema != a.schema.remove_metadata() and b.select(kept).cast(a.schema.remove_metadata()).schema is None:
            self.problems.append(f"{rel}: column types differ")
        for c in kept:
            if a.column(c).to_pylist() != b.column(c).to_pylist() or a.schema.field(c) != b.schema.field(c):
                self.problems.append(f"{rel}: column `{c}` differs")
        self.counts["parquet columns"] = self.counts.get("parquet columns", 0) + len(kept)

    def html(self, rel, old, new):
        def embedded(t):
            m = re.search(r'<script type="application/json" id="tool-json">(.*?)</script>', t, re.S)
            return json.loads(m.group(1).replace("<\\/", "</")) if m else None
        a, b = embedded(old), embedded(new)
        if a is None or b is None:
            if self.norm(old) != self.norm(new):
                self.problems.append(f"{rel}: page differs")
            return
        for key, where in (("budget", "kineto budget"), ("top", "kineto top"), ("roofline", "kineto roofline")):
            xa, xb = a.get(key), b.get(key)
            if isinstance(xa, list) and isinstance(xb, list):
                if len(xa) != len(xb):
                    self.problems.append(f"{rel}: {key}: {len(xa)} rows → {len(xb)}")
                    continue
                for i, (ra, rb) in enumerate(zip(xa, xb)):
                    ra = rename_row(ra, self.renames.get(where, []), "json")
                    drop_added(rb, self.added.get(where, []), where, self.problems, f"{rel} {key} {i}", "json")
                    if ra != rb:
                        diff = sorted(k for k in set(ra) | set(rb) if ra.get(k) != rb.get(k))
                        self.problems.append(f"{rel}: {key} row {i} differs in {diff[:8]}")
                        break
            elif xa != xb:
                self.problems.append(f"{rel}: {key} differs")
        # The rest of the page: the same, but the tables of the tool's own rows (the top kernels, the
        # roofline steps: a column per scalar key, `file` among them), which show renamed and added keys
        # too; their values are the embedded JSON's, checked above.
        def rest(t):
            t = re.sub(r'<script type="application/json" id="tool-json">.*?</script>', "", t, flags=re.S)
            return re.sub(r"<table\b(?:(?!</table>).)*?<th>file</th>.*?</table>", "", t, flags=re.S)
        if self.norm(rest(old)) != self.norm(rest(new)):
            self.problems.append(f"{rel}: the page beyond its embedded JSON and top table differs")
        self.counts["pages"] = self.counts.get("pages", 0) + 1

    def run(self):
        for root, _, files in os.walk(self.before):
            for f in sorted(files):
                old_path = os.path.join(root, f)
                rel = os.path.relpath(old_path, self.before)
                new_path = os.path.join(self.after, rel)
                self.counts["files"] += 1
                if not os.path.exists(new_path):
                    self.problems.append(f"{rel}: missing after")
                    continue
                if f.endswith(".parquet"):
                    self.parquet(rel, old_path, new_path)
                    continue
                old = open(old_path, encoding="utf-8", errors="replace").read()
                new = open(new_path, encoding="utf-8", errors="replace").read()
                if self.norm(old) == self.norm(new):
                    self.counts["identical"] += 1
                    continue
                if f.endswith(".err") and sorted(self.norm(old).splitlines()) == sorted(self.norm(new).splitlines()):
                    # Notes printed by worker threads as each trace is read (`kineto ranks`): the same
                    # lines, in the order the threads finished.
                    self.counts["stderr, same lines in another order"] = self.counts.get(
                        "stderr, same lines in another order", 0) + 1
                    continue
                self.counts["renamed"] += 1
                where, form = listing_of(f)
                if f.endswith(".html"):
                    self.html(rel, old, new)
                elif where:
                    self.listing(rel, old, new, where, form)
                else:
                    self.problems.append(f"{rel}: differs and is not a listing with documented renames")
        for root, _, files in os.walk(self.after):
            for f in files:
                rel = os.path.relpath(os.path.join(root, f), self.after)
                if not os.path.exists(os.path.join(self.before, rel)):
                    self.problems.append(f"{rel}: only after")
        self.cross()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--docs", default=os.path.join(os.path.dirname(__file__), "../../docs/tables.md"))
    args = ap.parse_args()
    renames, added = read_renames(args.docs)
    c = Compare(os.path.abspath(args.before), os.path.abspath(args.after), renames, added)
    c.run()
    for p in c.problems[:200]:
        print(p)
    print(f"{c.counts}; {len(c.problems)} differences not documented")
    return 1 if c.problems else 0


if __name__ == "__main__":
    sys.exit(main())
