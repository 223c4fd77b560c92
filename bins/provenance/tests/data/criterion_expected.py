"""The verdict rows `provenance diff old new` must give for criterion-two-runs/ (two real runs of the
criterion_bench example, each benchmark's new/benchmark.json and new/sample.json as criterion 0.8 wrote them
and the provenance.json beside them), worked out here without the tool: per-sample time per iteration
(times[i] / iters[i]), Welch's t-interval on ln(mean new / mean old) at 95 % (docs/verdict.md), the Student t
quantile by numeric integration of its density. Writes criterion_expected.json beside this script.

    python3 bins/provenance/tests/data/criterion_expected.py
"""

import json
import math
import os

HERE = os.path.dirname(os.path.abspath(__file__))
RUNS = os.path.join(HERE, "criterion-two-runs")
MARGIN = 2.0


def t_cdf(x, df):
    """P(T <= x) for Student's t, x >= 0: 0.5 + the density integrated from 0 to x (Simpson, 20 000 steps)."""
    c = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi)
    f = lambda t: c * (1 + t * t / df) ** (-(df + 1) / 2)
    n = 20000
    h = x / n
    s = f(0) + f(x) + sum((4 if i % 2 else 2) * f(i * h) for i in range(1, n))
    return 0.5 + s * h / 3


def t_quantile(p, df):
    lo, hi = 0.0, 100.0
    for _ in range(100):
        mid = (lo + hi) / 2
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def rounds(side, bench):
    s = json.load(open(os.path.join(RUNS, side, bench, "new", "sample.json")))
    return [t / n for t, n in zip(s["times"], s["iters"])]


def row(bench):
    o, n = rounds("old", bench), rounds("new", bench)
    mo, mn = sum(o) / len(o), sum(n) / len(n)
    vo = sum((x - mo) ** 2 for x in o) / (len(o) - 1)
    vn = sum((x - mn) ** 2 for x in n) / (len(n) - 1)
    a, b = vn / (len(n) * mn * mn), vo / (len(o) * mo * mo)
    df = (a + b) ** 2 / (a * a / (len(n) - 1) + b * b / (len(o) - 1))
    half = t_quantile(0.975, df) * math.sqrt(a + b)
    x = math.log(mn / mo)
    lo, hi = 100 * math.expm1(x - half), 100 * math.expm1(x + half)
    if lo >= -MARGIN and hi <= MARGIN:
        verdict = "unchanged"
    elif lo > 0:
        verdict = "slower"
    elif hi < 0:
        verdict = "faster"
    else:
        verdict = "inconclusive"
    return {"name": bench, "n_old": len(o), "n_new": len(n), "delta_pct": 100 * (mn / mo - 1),
            "ci_low_pct": lo, "ci_high_pct": hi, "verdict": verdict}


if __name__ == "__main__":
    out = [row(b) for b in ("sum_1000", "sum_10000")]
    with open(os.path.join(HERE, "criterion_expected.json"), "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(json.dumps(out, indent=1))
