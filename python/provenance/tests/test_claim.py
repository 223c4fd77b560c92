"""claim_output: the seed's startup check (refuse an existing result file unless overwrite), done by tool-io's
claim: a refused file is not touched, the error names it, the name is held while the claim lives, writes
are atomic and never lose a file that appeared at the name meanwhile."""

import json
import os

import pytest

import kl1_provenance
from kl1_provenance import OutputError, claim_output


def test_an_existing_file_is_refused_and_left_as_it_was(tmp_path):
    p = tmp_path / "result.json"
    p.write_text("an hour's run\n")
    os.utime(p, ns=(1_000_000_000_000_000_000, 1_000_000_000_000_000_000))
    before = p.stat()
    with pytest.raises(OutputError) as e:
        claim_output(p)
    assert e.value.path == str(p)
    assert str(p) in str(e.value) and "exists" in str(e.value)
    after = p.stat()
    assert p.read_text() == "an hour's run\n"
    assert (after.st_ino, after.st_size, after.st_mtime_ns, after.st_mode) == (
        before.st_ino, before.st_size, before.st_mtime_ns, before.st_mode)
    assert sorted(os.listdir(tmp_path)) == ["result.json"]  # no claim file, no temporary file left


def test_a_relative_name_is_reported_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "r.json").write_text("{}")
    with pytest.raises(OutputError) as e:
        claim_output("r.json")
    assert e.value.path == str(tmp_path / "r.json")


def test_overwrite_replaces_atomically_and_keeps_the_mode(tmp_path):
    p = tmp_path / "result.json"
    p.write_text("old\n")
    p.chmod(0o600)
    out = claim_output(p, overwrite=True)
    assert out.write_json({"tokens_per_s": 1.5, "n": [1, 2]}) == p
    assert json.loads(p.read_text()) == {"tokens_per_s": 1.5, "n": [1, 2]}
    assert p.stat().st_mode & 0o777 == 0o600


def test_devices_are_refused_even_with_overwrite():
    with pytest.raises(OutputError) as e:
        claim_output("/dev/null", overwrite=True)
    assert e.value.path == "/dev/null" and "not a regular file" in str(e.value)


def test_the_name_is_held_while_the_claim_lives(tmp_path):
    p = tmp_path / "sub" / "dir" / "result.json"   # missing directories are made, as the seed did
    first = claim_output(p)
    assert first.path == p and os.fspath(first) == str(p) and p.parent.is_dir()
    with pytest.raises(OutputError) as e:
        claim_output(p)
    assert e.value.path == str(p)
    del first
    claim_output(p)  # released with the object


def test_a_file_that_appears_during_the_run_is_kept(tmp_path, capfd):
    p = tmp_path / "result.json"
    out = claim_output(p)
    p.write_text("someone else's\n")
    went = out.write_text("ours\n")
    assert p.read_text() == "someone else's\n"
    assert went != p and went.parent == tmp_path and went.read_text() == "ours\n"
    assert str(went) in capfd.readouterr().err


def test_nan_in_a_result_writes_nothing_and_names_the_file_and_the_place(tmp_path):
    p = tmp_path / "result.json"
    out = claim_output(p)
    with pytest.raises(OutputError) as e:
        out.write_json({"runs": [{"tps": 1.0}, {"tps": float("nan")}]})
    assert e.value.path == str(p)
    assert str(p) in str(e.value) and "`runs[1].tps`" in str(e.value)
    assert not p.exists()
    with pytest.raises(OutputError, match="not JSON"):
        out.write_json({"when": object()})


def test_the_claim_is_a_path_for_code_written_against_the_seed(tmp_path):
    out = claim_output(tmp_path / "r.json")
    with open(out, "w") as f:  # the seed returned a pathlib.Path
        f.write("{}")
    assert (tmp_path / "r.json").read_text() == "{}"
    assert repr(out).startswith("kl1_provenance.Claim(")
    assert kl1_provenance.Claim is type(out)


def test_two_names_that_are_not_utf8_are_two_results_under_their_own_bytes(tmp_path):
    # `out\xff.json` and `out\xfe.json` differ only in bytes that are not UTF-8 (os.fsdecode keeps them as
    # surrogates); they collided as "already claimed" when the claim's names were made from a lossy rendering.
    a = os.fsdecode(os.fsencode(tmp_path) + b"/out\xff.json")
    b = os.fsdecode(os.fsencode(tmp_path) + b"/out\xfe.json")
    ca, cb = claim_output(a), claim_output(b)
    assert os.fspath(ca) == a and os.fspath(cb) == b
    ca.write_text("a")
    cb.write_text("b")
    del ca, cb
    assert sorted(os.listdir(os.fsencode(tmp_path))) == [b"out\xfe.json", b"out\xff.json"]
    with open(a) as f:
        assert f.read() == "a"
    # The error's path is the name's exact bytes too.
    with pytest.raises(OutputError) as e:
        claim_output(a)
    assert e.value.path == a and os.fsencode(e.value.path) == os.fsencode(tmp_path) + b"/out\xff.json"
