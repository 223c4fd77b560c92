"""Where a benchmark number came from, recorded inside the Python benchmark that produced it.

    from kl1_provenance import Provenance, claim_output

    out = claim_output(args.out, args.overwrite)           # at startup: refuse an existing result file
    # ... load the model (not timed) ...
    prov = Provenance(weights="fp32 + bf16 autocast").start()
    # ... the timed runs ...
    json_out["provenance"] = prov.finish()                  # a plain dict, JSON-serialisable
    out.write_json(json_out)                                # atomically

or `with Provenance(weights=...) as prov: ...` and then `prov.record`. The record is the `provenance` crate's
(docs/provenance.md): the seed tool's keys with the seed's meaning (`time_utc`, `git`, `python`, `torch`,
`cuda`, `cudnn`, `gpu_name`, `driver`, `cpu_count`, the caller's fields, `before`, `during`, `monitored_s`,
`after`) and everything the crate adds (per-GPU monitor, coverage, verdict, environment, host load).
`provenance show` and `provenance diff` read it.

Only what only this interpreter knows comes from Python: its version, torch's versions and device name when
the script has imported torch (it is never imported here), and the script's own repository. The GPU monitor
(NVML, else nvidia-smi) samples on native threads; `start()` and `finish()` release the GIL while they wait.
"""

from __future__ import annotations

import json
import os
import platform
import signal
import sys
import threading
from pathlib import Path
from typing import Any, Dict, Optional, Tuple, Union

from . import _native
from ._native import RESERVED_KEYS, SCHEMA_VERSION, OutputError, __version__

PathLike = Union[str, "os.PathLike[str]"]

__all__ = [
    "Provenance",
    "claim_output",
    "Claim",
    "OutputError",
    "interpreter_versions",
    "script_dir",
    "SCHEMA_VERSION",
    "RESERVED_KEYS",
    "__version__",
]

#: The reason given for torch's keys when the script has not imported torch.
TORCH_NOT_IMPORTED = "torch not imported"


def _ask(what: str, call) -> Tuple[Any, Optional[str]]:
    try:
        return call(), None
    except Exception as e:  # a broken torch install must not stop the benchmark: the key says why
        return None, f"{what} raised {type(e).__name__}: {e}"


def interpreter_versions() -> Tuple[Dict[str, Any], Dict[str, str]]:
    """The versions only this interpreter knows, as (values, reasons): `python`, and `torch`, `cuda`, `cudnn`,
    `gpu_name` from torch when the script has imported it (never imported here). A key whose value is None
    has its reason in the second dict. `gpu_name` is absent when torch is not imported: the record's is then
    the first GPU in use, as any record's."""
    values: Dict[str, Any] = {"python": platform.python_version()}
    reasons: Dict[str, str] = {}
    torch = sys.modules.get("torch")
    if torch is None:
        for k in ("torch", "cuda", "cudnn"):
            values[k] = None
            reasons[k] = TORCH_NOT_IMPORTED
        return values, reasons

    values["torch"], why = _ask("torch.__version__", lambda: str(torch.__version__))
    if why:
        reasons["torch"] = why

    values["cuda"], why = _ask("torch.version.cuda", lambda: torch.version.cuda)
    if values["cuda"] is not None:
        values["cuda"] = str(values["cuda"])
    elif why is None:
        why = "torch.version.cuda is None: this torch was built without CUDA"
    if why:
        reasons["cuda"] = why

    available, why = _ask("torch.backends.cudnn.is_available()", lambda: torch.backends.cudnn.is_available())
    if available:
        values["cudnn"], why = _ask("torch.backends.cudnn.version()", lambda: torch.backends.cudnn.version())
        if values["cudnn"] is None and why is None:
            why = "torch.backends.cudnn.version() is None"
    else:
        values["cudnn"] = None
        why = why or "torch.backends.cudnn.is_available() is False"
    if why:
        reasons["cudnn"] = why

    # Asking for a device name initialises CUDA (a context on the GPU, seconds); only a script that has
    # already done so is asked. Its benchmark runs on that GPU; one that has not runs on the CPU so far.
    cuda = getattr(torch, "cuda", None)
    usable, why = _ask("torch.cuda.is_available()", lambda: cuda.is_available())
    if why is None and not usable:
        why = "torch.cuda.is_available() is False: torch computes on the CPU"
    if why is None:
        ready, why = _ask("torch.cuda.is_initialized()", lambda: cuda.is_initialized())
        if why is None and not ready:
            why = ("torch has not initialised CUDA yet (torch.cuda.is_initialized() is False), and asking for "
                   "the device name would initialise it")
    if why is None:
        values["gpu_name"], why = _ask("torch.cuda.get_device_name()", lambda: str(cuda.get_device_name()))
    else:
        values["gpu_name"] = None
    if why:
        reasons["gpu_name"] = why
    return values, reasons


def script_dir() -> Optional[Path]:
    """The directory of the running script (`__main__`'s file), whose repository the record's `git` is
    about; None for an interactive session or `python -c`."""
    main = sys.modules.get("__main__")
    f = getattr(main, "__file__", None)
    return Path(f).resolve().parent if f else None


def _what(e: BaseException) -> str:
    return "SIGINT (Ctrl-C)" if isinstance(e, KeyboardInterrupt) else type(e).__name__


class _InterruptWatch:
    """Notices SIGINT (Ctrl-C) between `start()` and `finish()`, in the main thread only (where Python runs
    signal handlers). The previous handler still runs — Python's raises KeyboardInterrupt — except while a
    native call is in progress, when it is deferred to the call's end so that the record is never left
    half-made."""

    def __init__(self):
        self.seen = 0
        self.pending = False
        self.deferring = False
        self._previous = None
        self._installed = False

    def begin(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        previous = signal.getsignal(signal.SIGINT)
        # SIG_IGN: Ctrl-C interrupts nothing; SIG_DFL: the process dies with no Python code run; None: a
        # handler not installed from Python. None of them is ours to wrap.
        if not callable(previous):
            return
        self._previous = previous
        signal.signal(signal.SIGINT, self._on_sigint)
        self._installed = True

    def _on_sigint(self, signum, frame):
        self.seen += 1
        if self.deferring:
            self.pending = True
            return
        self._previous(signum, frame)

    def end(self) -> None:
        if self._installed:
            self._installed = False
            # Only our own handler is put back: one the script installed during the region stays.
            if signal.getsignal(signal.SIGINT) == self._on_sigint:
                signal.signal(signal.SIGINT, self._previous)

    def deliver_pending(self) -> None:
        """Runs the previous handler for a SIGINT that arrived during a native call (raises KeyboardInterrupt
        with Python's own handler)."""
        if self.pending:
            self.pending = False
            if self._previous is not None:
                self._previous(signal.SIGINT, None)


class Provenance:
    """A provenance record around a timed region: `start()` just before it, `finish()` just after.

    `Provenance(interval_ms=500, **fields)`: the GPU sampling interval (the seed's default) and user fields
    written at the top level of the record (e.g. `weights="bf16"`); a field may not take one of the record's
    own keys (`RESERVED_KEYS`). Options, keyword only: `repo_dir` (whose git state is recorded; default the
    running script's directory, else the current one), `backend` (`auto`, `nvml`, `nvidia-smi`,
    `replay:FILE`), `gpus` (`cuda`: the GPUs CUDA_VISIBLE_DEVICES names, the default; `all`; `0,1`),
    `nvidia_smi` (the executable; default $KL1_NVIDIA_SMI, else PATH's), `windows_load` (read Windows' CPU
    load on WSL before and after, two seconds each; default True), and `fields` (a dict, for field names
    that are also option names).
    """

    def __init__(
        self,
        interval_ms: int = 500,
        *,
        repo_dir: Optional[PathLike] = None,
        backend: Optional[str] = None,
        gpus: Optional[str] = None,
        nvidia_smi: Optional[PathLike] = None,
        windows_load: bool = True,
        fields: Optional[Dict[str, Any]] = None,
        **more_fields: Any,
    ):
        self.interval_ms = int(interval_ms)
        all_fields = dict(fields or {})
        all_fields.update(more_fields)
        for k, v in all_fields.items():
            _native.check_field(k, v)  # the crate's rule: reserved keys and NaN refused now, not at start()
        self._fields = all_fields
        self._options = {
            "repo_dir": os.fspath(repo_dir) if repo_dir is not None else None,
            "backend": backend,
            "gpus": gpus,
            "nvidia_smi": os.fspath(nvidia_smi) if nvidia_smi is not None else None,
            "windows_load": bool(windows_load),
        }
        self._recording = None
        self._watch: Optional[_InterruptWatch] = None
        #: The record once finished (what `finish()` returned), else None.
        self.record: Optional[Dict[str, Any]] = None

    def __repr__(self) -> str:
        state = "finished" if self.record is not None else "running" if self._recording else "not started"
        return f"kl1_provenance.Provenance({state}, interval_ms={self.interval_ms})"

    def start(self) -> "Provenance":
        """Reads the static part (git, versions, host, GPU identity) and `before`, then starts the GPU monitor.
        Call it after loading the model, just before the timed region. Returns self."""
        if self._recording is not None or self.record is not None:
            raise RuntimeError("this Provenance was started already; make a new one per timed region")
        values, reasons = interpreter_versions()
        repo_dir = self._options["repo_dir"]
        if repo_dir is None:
            here = script_dir()
            repo_dir = os.fspath(here) if here is not None else None
        watch = _InterruptWatch()
        watch.begin()
        watch.deferring = True
        self._watch = watch
        try:
            self._recording = _native.start(
                interval_ms=self.interval_ms,
                fields=self._fields,
                versions=values,
                reasons=reasons,
                repo_dir=repo_dir,
                backend=self._options["backend"],
                gpus=self._options["gpus"],
                nvidia_smi=self._options["nvidia_smi"],
                windows_load=self._options["windows_load"],
            )
            watch.deferring = False
            watch.deliver_pending()  # a Ctrl-C during the set-up: KeyboardInterrupt now
        except BaseException as e:
            watch.deferring = False
            if self._recording is None:
                watch.end()
            else:
                # Ctrl-C during the set-up means stop: the record ends here, marked interrupted, and the
                # exception goes on (the timed region never runs).
                self._finish(f"{_what(e)} while the record was being started")
            raise
        return self

    def field(self, key: str, value: Any) -> None:
        """Adds a user field; during the run, for what is known only then (the benchmark's own result)."""
        if self.record is not None:
            raise RuntimeError("the record is finished")
        if self._recording is not None:
            self._recording.field(key, value)
        else:
            _native.check_field(key, value)
            self._fields[key] = value

    @property
    def gpu_samples(self) -> int:
        """GPU samples the monitor has taken so far (all GPUs together)."""
        return self._recording.gpu_samples() if self._recording is not None else 0

    def finish(self) -> Dict[str, Any]:
        """Stops the monitor, reads `after`, judges the run, and returns the record as a plain dict (also kept
        as `self.record`). A SIGINT (Ctrl-C) that reached the region marks it interrupted. A second call
        returns the same record."""
        if self.record is not None:
            return self.record
        if self._recording is None:
            raise RuntimeError("finish() before start()")
        interrupted = None
        if self._watch is not None and self._watch.seen:
            interrupted = "SIGINT (Ctrl-C) during the timed region"
        return self._finish(interrupted)

    def _finish(self, interrupted: Optional[str]) -> Dict[str, Any]:
        watch = self._watch or _InterruptWatch()
        recording, self._recording = self._recording, None
        watch.deferring = True
        try:
            # Kept before a deferred Ctrl-C can be delivered: the record is never lost to it.
            self.record = json.loads(recording.finish(interrupted))
        finally:
            watch.end()
            watch.deferring = False
        # A Ctrl-C during finish() itself came after the work: the record stands, then it is delivered.
        watch.deliver_pending()
        return self.record

    def __enter__(self) -> "Provenance":
        return self.start()

    def __exit__(self, exc_type, exc, tb) -> bool:
        if self.record is None:
            interrupted = None
            if self._watch is not None and self._watch.seen:
                interrupted = "SIGINT (Ctrl-C) during the timed region"
            elif exc_type is not None and issubclass(exc_type, KeyboardInterrupt):
                interrupted = "KeyboardInterrupt raised in the timed region"
            self._finish(interrupted)
        return False  # the exception, if any, goes on


class Claim:
    """A result file reserved before the work (`claim_output`): the name is held while this object lives.
    Usable as a path (`open(claim, "w")`, `os.fspath`); `write_json`, `write_text` and `write_bytes` write
    atomically (temporary file beside it, fsync, rename) and return where the file went: the claimed path,
    or a name beside it when a file appeared there during the run (that file is kept)."""

    def __init__(self, native):
        self._native = native
        #: The claimed path, absolute.
        self.path = Path(native.path)

    def __fspath__(self) -> str:
        return os.fspath(self.path)

    def __str__(self) -> str:
        return str(self.path)

    def __repr__(self) -> str:
        return f"kl1_provenance.Claim({str(self.path)!r})"

    def write_json(self, value: Any) -> Path:
        """`value` as pretty JSON; NaN or infinity anywhere in it raises OutputError and writes nothing."""
        return self._said(Path(self._native.write_json(value)))

    def write_bytes(self, data: bytes) -> Path:
        return self._said(Path(self._native.write_bytes(bytes(data))))

    def write_text(self, text: str, encoding: str = "utf-8") -> Path:
        return self.write_bytes(text.encode(encoding))

    def _said(self, written: Path) -> Path:
        if written != self.path:
            print(f"kl1_provenance: {self.path} appeared during the run and was kept; the result went to "
                  f"{written}", file=sys.stderr)
        return written


def claim_output(path: PathLike, overwrite: bool = False) -> Claim:
    """Call before the benchmark starts: reserves `path` for its result. An existing file is refused unless
    `overwrite`, anything but a regular file always (`/dev/null`, a FIFO), and a name another run holds too;
    the error is OutputError, whose message and `.path` name the file. A refused file is not touched."""
    return Claim(_native.claim_output(os.fspath(path), bool(overwrite)))
