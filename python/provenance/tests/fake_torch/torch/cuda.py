import os

_CPU = os.environ.get("FAKE_TORCH") == "cpu"


def is_available():
    return not _CPU


def is_initialized():
    return not _CPU


def get_device_name(device=None):
    if _CPU:
        raise RuntimeError("Found no NVIDIA driver on your system")
    return "Fake Device from torch"
