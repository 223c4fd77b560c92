"""Values nested without end or very deep: a field of `Provenance(...)` or a result of `Claim.write_json` that
holds itself, or nests lists and dicts 20,000 deep, is refused where it is given with a ValueError naming
where it is and the limit (docs/provenance.md: a field nests at most 100 lists and dicts, a result 127), never
a crash of the interpreter, and never an error from `finish()` after the timed work. The cases that crashed
the interpreter (SIGSEGV) run in a child interpreter, so that a crash fails the test instead of the test run."""

import inspect
import json
import subprocess
import sys
import textwrap

import pytest

import kl1_provenance
from conftest import PROVENANCE
from kl1_provenance import OutputError, claim_output

#: The documented limits (docs/provenance.md), written here, not read from the module.
FIELD_LIMIT = 100
RESULT_LIMIT = 127


def nested_lists(depth):
    """`depth` lists, one inside the other, around 1: `nested_lists(2) == [[1]]`."""
    v = 1
    for _ in range(depth):
        v = [v]
    return v


def nested_dicts(depth):
    """`depth` dicts, one inside the other, each under the key "k", around 1."""
    v = 1
    for _ in range(depth):
        v = {"k": v}
    return v


def in_a_child(body: str) -> str:
    """Runs `body` in a child interpreter (with `nested_lists` and `nested_dicts` defined); returns its stdout.
    A crash (SIGSEGV: a negative return code) or any other failure fails the test, with the child's stderr."""
    # The helpers' own source, not a copy of it.
    helpers = "\n".join(["import kl1_provenance", inspect.getsource(nested_lists), inspect.getsource(nested_dicts)])
    r = subprocess.run([sys.executable, "-c", helpers + textwrap.dedent(body)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, f"the child ended with {r.returncode}:\n{r.stdout}\n{r.stderr}"
    return r.stdout


def test_a_field_that_holds_itself_or_nests_20000_deep_is_refused_at_construction():
    out = in_a_child('''
        me = []
        me.append(me)
        loop = {"runs": [{}]}
        loop["runs"][0]["back"] = loop
        for name, value in [("me", me), ("loop", loop), ("lists", nested_lists(20000)),
                            ("dicts", nested_dicts(20000)), ("mid", nested_lists(1000)),
                            ("late", nested_lists(15000))]:
            try:
                kl1_provenance.Provenance(**{name: value})
                print(name, "accepted")
            except ValueError as e:
                print(name, "ValueError", e)
    ''')
    lines = dict(line.split(" ", 1) for line in out.splitlines())
    assert lines["me"] == "ValueError me[0]: a list or dict that contains itself is not JSON (it would never end)"
    assert lines["loop"].startswith("ValueError loop.runs[0].back: a list or dict that contains itself")
    # The 101st list opens at the path of 100 indices: `lists` and `[0]` 100 times, cut at 80 characters.
    at_101 = "lists" + "[0]" * FIELD_LIMIT
    assert lines["lists"] == (f"ValueError {at_101[:80]}…: lists and dicts nested more than {FIELD_LIMIT} deep; "
                              f"at most {FIELD_LIMIT} are accepted here (docs/provenance.md)")
    assert lines["dicts"].startswith("ValueError dicts.k.k.k.") and f"more than {FIELD_LIMIT} deep" in lines["dicts"]
    # 1,000 and 15,000 deep were accepted, and `finish()` then failed after the timed work.
    for name in ("mid", "late"):
        assert lines[name].startswith(f"ValueError {name}[0][0]") and f"more than {FIELD_LIMIT} deep" in lines[name]


def test_a_field_given_during_the_run_is_refused_there_and_the_record_still_finishes(tmp_path):
    out = in_a_child(f'''
        p = kl1_provenance.Provenance(windows_load=False, backend="replay:{tmp_path}/none.csv",
                                      repo_dir="{tmp_path}").start()
        for value in (nested_lists(20000), nested_dicts({FIELD_LIMIT + 1})):
            try:
                p.field("result", value)
                print("accepted")
            except ValueError as e:
                print("ValueError", str(e)[:12])
        rec = p.finish()
        print("finished", "result" in rec)
    ''')
    assert out.splitlines() == ["ValueError result[0][0]", "ValueError result.k.k.k", "finished False"]


def test_a_field_at_the_limit_is_recorded_and_read_back_by_provenance_show(tmp_path):
    with pytest.raises(ValueError, match=f"more than {FIELD_LIMIT} deep"):
        kl1_provenance.Provenance(deep=nested_lists(FIELD_LIMIT + 1))
    # The same sublist twice is not a loop: only a value inside itself is.
    shared = [1, 2]
    p = kl1_provenance.Provenance(windows_load=False, backend=f"replay:{tmp_path}/none.csv", repo_dir=tmp_path,
                                  deep=nested_lists(FIELD_LIMIT), twice={"a": shared, "b": shared})
    rec = p.start().finish()
    assert rec["deep"] == nested_lists(FIELD_LIMIT)
    assert rec["twice"] == {"a": [1, 2], "b": [1, 2]}
    # The record nests one level more than its deepest field (101), which every reader here reads; and it fits
    # in a result file with room to spare.
    record = tmp_path / "record.json"
    assert claim_output(record).write_json(rec) == record
    shown = subprocess.run([PROVENANCE, "show", str(record)], capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    result = tmp_path / "result.json"
    claim_output(result).write_json({"result": 1, "provenance": rec})
    assert json.loads(result.read_text())["provenance"]["deep"] == nested_lists(FIELD_LIMIT)


def test_a_result_that_holds_itself_or_nests_20000_deep_writes_nothing_and_names_the_file(tmp_path):
    out = in_a_child(f'''
        import os
        me = {{}}
        me["me"] = me
        for i, value in enumerate([me, nested_lists(20000)]):
            out = kl1_provenance.claim_output("{tmp_path}/r%d.json" % i)
            try:
                out.write_json(value)
                print("written")
            except kl1_provenance.OutputError as e:
                print(e.path == os.fspath(out.path), e)
        del out
        print(sorted(os.listdir("{tmp_path}")))
    ''')
    lines = out.splitlines()
    assert lines[0] == (f"True {tmp_path}/r0.json: $.me: a list or dict that contains itself is not JSON (it would "
                        f"never end); nothing was written")
    assert lines[1].startswith(f"True {tmp_path}/r1.json: $[0][0]") and f"more than {RESULT_LIMIT} deep" in lines[1]
    assert lines[2] == "[]"


def test_a_result_at_its_limit_is_written_and_one_level_more_is_refused(tmp_path):
    at_limit = tmp_path / "at.json"
    assert claim_output(at_limit).write_json(nested_lists(RESULT_LIMIT)) == at_limit
    assert json.loads(at_limit.read_text()) == nested_lists(RESULT_LIMIT)
    over = tmp_path / "over.json"
    with pytest.raises(OutputError, match=f"more than {RESULT_LIMIT} deep"):
        claim_output(over).write_json(nested_lists(RESULT_LIMIT + 1))
    assert not over.exists()


def test_a_list_subclass_is_read_as_the_items_it_holds_not_through_its_iter(tmp_path):
    # A subclass's `__iter__` may yield anything, or never end; the list's own items are what it holds.
    class Other(list):
        def __iter__(self):
            yield 7

    p = kl1_provenance.Provenance(windows_load=False, backend=f"replay:{tmp_path}/none.csv", repo_dir=tmp_path,
                                  values=Other([1, 2]), pairs={"t": (Other([3]),)})
    rec = p.start().finish()
    assert rec["values"] == [1, 2] and rec["pairs"] == {"t": [[3]]}
