import os

_CPU = os.environ.get("FAKE_TORCH") == "cpu"


def is_available():
    return not _CPU


def version():
    # torch's form: major * 10000 + minor * 100 + patch for cuDNN 9 (9.1.0).
    return None if _CPU else 90100
