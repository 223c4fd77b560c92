import os

# torch.version.cuda: the CUDA torch was built with (None for a CPU build).
cuda = None if os.environ.get("FAKE_TORCH") == "cpu" else "12.4"
