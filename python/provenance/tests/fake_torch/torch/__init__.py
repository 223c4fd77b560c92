"""A stand-in for torch holding only what kl1_provenance reads, with values no real machine here has, so a
test can tell torch's answers from the GPU monitor's. FAKE_TORCH=cpu makes it a CPU-only build (no CUDA,
no cuDNN, no GPU); FAKE_TORCH=uninit a CUDA build whose CUDA the script has not initialised yet."""
import os

from . import backends, cuda, version

__version__ = "2.5.1+fake" if os.environ.get("FAKE_TORCH") != "cpu" else "2.5.1+cpu"
