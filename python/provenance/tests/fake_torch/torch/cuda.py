import os

_MODE = os.environ.get("FAKE_TORCH")
_CPU = _MODE == "cpu"
# FAKE_TORCH=uninit: a CUDA build on a GPU machine before the script has touched CUDA.
_INITIALIZED = not _CPU and _MODE != "uninit"
#: How often get_device_name was called (it initialises CUDA in real torch).
device_name_calls = 0


def is_available():
    return not _CPU


def is_initialized():
    return _INITIALIZED


def get_device_name(device=None):
    global device_name_calls
    device_name_calls += 1
    if _CPU:
        raise RuntimeError("Found no NVIDIA driver on your system")
    return "Fake Device from torch"
