#!/usr/bin/env bash
# Browser test of the HTML reports: runs the four tools on the bundled data (the demo window, real Kineto
# traces, the gpu-monitor replay fixture, a provenance record made with it), renders every report, opens each
# in headless Chromium and fails when a page logs anything to the console (a JS error included), when its
# script did not run to its end, when it lacks its charts, or when its screenshot is blank. Screenshots and
# pages are kept under target/browser-test/ as artifacts.
#
# Chromium is Debian's package; the script installs it when missing (as root, with apt-get). It SKIPS (exit 0,
# with a message saying so) only when Chromium is not there and cannot be installed.
#
# Two negative controls run first, so that the checks are known to be able to fail: a page with a JS error
# must be caught by the console check, and an empty page by the blank-screenshot check. The probes of the
# tables and the timeline have their own: each must fail on a copy of its page broken in what it checks
# (the timeline's script removed, a finding's mark removed, the kernel names' tooltips removed).
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=target/browser-test
# `--prepare`: only the install (tests/run-all.sh does it beside the Rust tests); its log is kept apart.
prepare=0
if [ "${1:-}" = --prepare ]; then prepare=1; OUT=target/browser-prepare; fi
rm -rf "$OUT"
mkdir -p "$OUT"

find_chromium() { command -v chromium || command -v chromium-browser || true; }
CHROMIUM=${CHROMIUM:-$(find_chromium)}
if [ -z "$CHROMIUM" ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        t0=$(date +%s)
        echo "browser test: installing Debian's chromium (apt-get) ..."
        if { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } >"$OUT/apt.log" 2>&1; then
            echo "browser test: chromium installed in $(( $(date +%s) - t0 )) s"
        else
            echo "browser test: apt-get failed, see $OUT/apt.log"
        fi
        CHROMIUM=$(find_chromium)
    fi
fi
if [ "$prepare" = 1 ]; then exit 0; fi
if [ -z "$CHROMIUM" ]; then
    echo "SKIP: browser test: chromium is not installed and could not be installed (not root, no apt-get, or no network; see $OUT/apt.log if any)"
    echo "browser: 0 passed, 0 failed, 1 skipped"
    exit 0
fi
echo "browser test: $("$CHROMIUM" --version 2>/dev/null | head -1)"

source tests/tools.sh
build_tools
T=target/debug
R=$T/examples/render
FIX=crates/html-report/tests/fixtures
REPLAY=crates/gpu-monitor/tests/fixtures/replay.jsonl

# Every page is written by the tool itself (its --html option, `kineto report`, the `diff` commands) from the
# project's generated data (two ranks of the demo window, the synthetic trace) and, when the shared corpus
# is beside the clone, real traces (dlrm ranks, ROCm, the vLLM roofline); the render example only adds a page
# from a hand-made roofline fixture beside the demo ranks' budget (several steps, both roofs crossed).
$T/kl1-bandwidth --window testdata/windows/demo --output "$OUT/kl1.json" --html "$OUT/kl1.html" --overwrite --quiet
# Two ranks of one capture of the demo window, as a directory of ranks.
DEMO2=$OUT/demo-ranks
mkdir -p "$DEMO2"
cp testdata/windows/demo/prof-32k-b1.decode.rank[01].pt.trace.json.gz "$DEMO2/"
$T/kineto budget --json "$DEMO2" >"$OUT/budget-demo.jsonl" 2>/dev/null
$T/provenance run -o "$OUT/record.json" --overwrite --backend "replay:$REPLAY" --gpus all -- true 2>/dev/null

# page name, expected number of charts, the command that writes $OUT/<name>.html
PAGES=(
    "kl1 6 true"
    "kineto-demo 2 $T/kineto report --overwrite --html $OUT/kineto-demo.html $DEMO2"
    "kineto-hand-roofline 2 $R kineto $OUT/budget-demo.jsonl - $FIX/roofline-hand.json $OUT/kineto-hand-roofline.html"
    "gpu-monitor 4 $T/gpu-monitor --backend replay:$REPLAY -q --overwrite --html $OUT/gpu-monitor.html"
    "provenance 4 $T/provenance show $OUT/record.json --overwrite --html $OUT/provenance.html"
    "kl1-diff 0 $T/kl1-bandwidth diff $OUT/kl1.json $OUT/kl1.json --overwrite --html $OUT/kl1-diff.html"
    "kineto-diff 0 $T/kineto diff $DEMO2 $DEMO2 --overwrite --html $OUT/kineto-diff.html"
    "kineto-timeline 2 $T/kineto report --whole-trace --overwrite --html $OUT/kineto-timeline.html testdata/synthetic/sglang_steps.json"
)
# The real traces of the shared corpus (from other repositories, not copied here): required with
# KL1_REQUIRE_CORPUS=1, else skipped, and counted as skipped, when absent.
SHARED=../shared/traces
skipped=0
if [ -d "$SHARED" ]; then
    VLLM=$SHARED/serving/vllm_decode_full/graph_execution.json.gz
    PAGES+=(
        "kineto-dlrm 2 $T/kineto report --overwrite --html $OUT/kineto-dlrm.html $SHARED/param/dlrm_kineto/"
        "kineto-amd 1 $T/kineto report --overwrite --html $OUT/kineto-amd.html $SHARED/hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz"
        "kineto-vllm-report-model 2 $T/kineto report --model testdata/models/gpt-oss-20b.json --overwrite --html $OUT/kineto-vllm-report-model.html $VLLM"
        "kineto-vllm-roofline 1 $T/kineto roofline --model testdata/models/gpt-oss-20b.json --overwrite --html $OUT/kineto-vllm-roofline.html $VLLM"
    )
elif [ "${KL1_REQUIRE_CORPUS:-}" = 1 ]; then
    echo "browser: KL1_REQUIRE_CORPUS=1 but $SHARED is missing"
    exit 1
else
    skipped=4
    echo "skip: 4 pages of real traces (dlrm, amd, vllm report and roofline): needs ../shared/traces (the shared corpus)"
fi

chrome() { # chrome PROFILE ARGS... : one fresh, offline, headless Chromium
    local profile=$1
    shift
    rm -rf "$profile"
    mkdir -p "$profile"
    timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$profile" --enable-logging=stderr --v=0 "$@"
}

# blank PNG: python3 reads the pixels' bytes; a blank page has a handful of distinct byte values.
distinct_bytes() {
    python3 - "$1" <<'EOF'
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat = 8, b""
while pos < len(data):
    (n,) = struct.unpack(">I", data[pos:pos + 4])
    if data[pos + 4:pos + 8] == b"IDAT":
        idat += data[pos + 8:pos + 8 + n]
    pos += 12 + n
print(len(set(zlib.decompress(idat))))
EOF
}

passed=0
failed=0
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }

check_page() { # check_page NAME CHARTS HTML
    local name=$1 charts=$2 html=$3 dom="$OUT/$1.dom.html" log="$OUT/$1.console.log" png="$OUT/$1.png"
    local url="file://$(pwd)/$html"
    chrome "$OUT/profile-$name" --dump-dom "$url" >"$dom" 2>"$log" || { fail "$name: chromium exited $?"; return; }
    if grep -q ':CONSOLE' "$log"; then
        fail "$name: console output:"; grep ':CONSOLE' "$log" | head -5; return
    fi
    grep -q 'data-report-js="ok"' "$dom" || { fail "$name: the page's script did not run to its end"; return; }
    local n
    n=$(grep -o '<svg' "$dom" | wc -l || true)
    [ "$n" -ge "$charts" ] || { fail "$name: $n charts, expected $charts"; return; }
    chrome "$OUT/profile-$name" --window-size=1400,1800 --screenshot="$png" "$url" >/dev/null 2>&1 \
        || { fail "$name: screenshot failed"; return; }
    local d
    d=$(distinct_bytes "$png")
    [ "$d" -gt 32 ] || { fail "$name: blank screenshot ($d distinct byte values)"; return; }
    echo "ok: $name ($n charts, $d distinct byte values in $png)"
    passed=$((passed + 1))
}

# Negative controls: the checks must be able to fail.
printf '<!DOCTYPE html><html><body><h1>x</h1><script>nope();</script></body></html>' >"$OUT/control-js-error.html"
chrome "$OUT/profile-control" --dump-dom "file://$(pwd)/$OUT/control-js-error.html" >/dev/null 2>"$OUT/control-js-error.log" || true
if grep -q 'Uncaught ReferenceError' "$OUT/control-js-error.log"; then
    echo "ok: control: a JS error is caught by the console check"
else
    fail "control: a page with a JS error logged nothing this script recognises"
fi
printf '<!DOCTYPE html><html><body></body></html>' >"$OUT/control-blank.html"
chrome "$OUT/profile-control" --window-size=1400,1800 --screenshot="$OUT/control-blank.png" \
    "file://$(pwd)/$OUT/control-blank.html" >/dev/null 2>&1 || true
d=$(distinct_bytes "$OUT/control-blank.png")
if [ "$d" -le 32 ]; then
    echo "ok: control: an empty page is judged blank ($d distinct byte values)"
else
    fail "control: an empty page was not judged blank ($d distinct byte values)"
fi

# The sort script, exercised: a copy of the kl1 page clicks the first numeric header of its first sortable
# table twice and checks ascending then descending order; a failure logs to the console.
sort_test() {
    python3 - "$OUT/kl1.html" "$OUT/kl1-sort.html" <<'EOF'
import sys
probe = """<script>(function(){
var t=document.querySelector('table.sortable');if(!t){console.error('sort test: no sortable table');return}
var rows=t.tBodies[0].rows,c=-1;for(var i=0;i<rows[0].cells.length;i++){if(rows[0].cells[i].hasAttribute('data-v')){c=i;break}}
if(c<0){console.error('sort test: no numeric column');return}
function vals(){var v=[];for(var r=0;r<rows.length;r++){var x=rows[r].cells[c];if(x.hasAttribute('data-v'))v.push(parseFloat(x.getAttribute('data-v')))}return v}
function sorted(v,asc){for(var i=1;i<v.length;i++){if(asc?v[i-1]>v[i]:v[i-1]<v[i])return false}return true}
var h=t.tHead.rows[0].cells[c];h.click();if(!sorted(vals(),true)){console.error('sort test: not ascending');return}
h.click();if(!sorted(vals(),false)){console.error('sort test: not descending');return}
document.documentElement.setAttribute('data-sort-test','ok:'+vals().length)})();</script>"""
html = open(sys.argv[1], encoding="utf-8").read()
open(sys.argv[2], "w", encoding="utf-8").write(html.replace("</body>", probe + "</body>"))
EOF
    local log="$OUT/kl1-sort.console.log"
    chrome "$OUT/profile-sort" --dump-dom "file://$(pwd)/$OUT/kl1-sort.html" >"$OUT/kl1-sort.dom.html" 2>"$log" || true
    if grep -q ':CONSOLE' "$log"; then
        fail "sort: $(grep ':CONSOLE' "$log" | head -2)"
    elif grep -q 'data-sort-test="ok:' "$OUT/kl1-sort.dom.html"; then
        echo "ok: sort: a click sorts a table ascending, a second click descending"
        passed=$((passed + 1))
    else
        fail "sort: the sort test did not run"
    fi
}

# probe_page NAME PAGE CHECK: a copy of PAGE with CHECK's script appended (after the page's own, so after
# the timeline is drawn); CHECK logs to the console on a failure and marks the document data-probe="ok:…"
# at its end. Sets PROBE to ok, bad (the console has output) or noend (the probe did not finish).
probe_page() {
    local name=$1 page=$2 check=$3
    python3 - "$page" "$OUT/$name.html" "$check" <<'EOF'
import sys
html = open(sys.argv[1], encoding="utf-8").read()
tag = sys.argv[3].split("/")[-1]
script = ("<script>(function(){function bad(m){console.error('" + tag + ": '+m)}\n"
          + open(sys.argv[3], encoding="utf-8").read() + "\n})();</script>")
open(sys.argv[2], "w", encoding="utf-8").write(html.replace("</body>", script + "</body>"))
EOF
    local log="$OUT/$name.console.log"
    chrome "$OUT/profile-$name" --dump-dom "file://$(pwd)/$OUT/$name.html" >"$OUT/$name.dom.html" 2>"$log" || true
    if grep -q ':CONSOLE' "$log"; then
        PROBE=bad
    elif grep -q 'data-probe="ok' "$OUT/$name.dom.html"; then
        PROBE=ok
    else
        PROBE=noend
    fi
}

# probe NAME PAGE CHECK: the probe must pass.
probe() {
    local name=$1
    probe_page "$@"
    case $PROBE in
    ok)
        echo "ok: $name: $(grep -o 'data-probe="ok[^"]*"' "$OUT/$name.dom.html")"
        passed=$((passed + 1))
        ;;
    bad) fail "$name: $(grep ':CONSOLE' "$OUT/$name.console.log" | head -3)" ;;
    *) fail "$name: the probe did not run to its end" ;;
    esac
}

# control_probe NAME PAGE CHECK BREAK: a copy of PAGE broken on purpose (BREAK: a Python expression turning
# `html` into the broken page; `derived(html, f)` edits the page's derived JSON with f) must make CHECK fail
# with its own message: so the probe is known to see what it checks.
control_probe() {
    local name=$1 page=$2 check=$3 brk=$4
    if ! python3 - "$page" "$OUT/$name.broken.html" "$brk" <<'EOF'; then
import json, re, sys
html = open(sys.argv[1], encoding="utf-8").read()
def derived(html, f):
    m = re.search(r'(<script type="application/json" id="derived-json">)(.*?)(</script>)', html, re.S)
    d = json.loads(m.group(2).replace("<\\/", "</"))
    f(d)
    text = json.dumps(d, ensure_ascii=False).replace("</", "<\\/")
    return html[:m.start(2)] + text + html[m.end(2):]
broken = eval(sys.argv[3])
assert broken != html, "the break changed nothing"
open(sys.argv[2], "w", encoding="utf-8").write(broken)
EOF
        fail "control: $name: could not break the page"
        return
    fi
    probe_page "$name" "$OUT/$name.broken.html" "$check"
    local tag=${check##*/}
    if [ "$PROBE" = bad ] && grep -q "$tag: " "$OUT/$name.console.log"; then
        echo "ok: control: $name fails its probe: $(grep -o "$tag: .*" "$OUT/$name.console.log" | head -1 | cut -c1-140)"
    else
        fail "control: $name: the probe did not fail ($PROBE)"
    fi
}

for spec in "${PAGES[@]}"; do
    read -r name charts cmd <<<"$spec"
    # shellcheck disable=SC2086
    if ! $cmd >/dev/null 2>"$OUT/$name.render.log"; then
        fail "$name: writing the page failed: $(cat "$OUT/$name.render.log")"
        continue
    fi
    check_page "$name" "$charts" "$OUT/$name.html"
done
sort_test
# The kineto page's tables (sorting by a time column, tooltips, right-aligned numbers) on the demo ranks,
# and the timeline of the synthetic trace's whole-trace step, counted by hand (tests/browser/timeline.js).
probe kineto-tables-probe "$OUT/kineto-demo.html" tests/browser/tables.js
probe kineto-timeline-probe "$OUT/kineto-timeline.html" tests/browser/timeline.js
# Negative controls of the probes: each on a copy of its page broken in what it checks.
control_probe control-no-timeline-script "$OUT/kineto-timeline.html" tests/browser/timeline.js \
    're.sub(r"<script>window\.kl1Timeline=.*?</script>", "", html, count=1, flags=re.S)'
control_probe control-mark-missing "$OUT/kineto-timeline.html" tests/browser/timeline.js \
    'derived(html, lambda d: d["timelines"][0].__setitem__("marks", []))'
control_probe control-name-without-tooltip "$OUT/kineto-demo.html" tests/browser/tables.js \
    're.sub(r"(<td class=\"name\") title=\"[^\"]*\"", r"\1", html)'
rm -rf "$OUT"/profile-*

echo "browser: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
