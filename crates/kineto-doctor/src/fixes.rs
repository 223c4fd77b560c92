//! The fix catalogue: per finding, the change to make, the condition that selects it from what the
//! trace shows (the serving engine, the GPU vendor and generation, the copies' memory), and the source
//! that documents it. Data, not prose: `docs/doctor.md` is this table with the reasoning. The first
//! entry of a finding whose condition holds is its fix; where none holds the finding has no catalogued
//! fix — never a fix for another server or GPU than the trace's.

use crate::{Finding, FindingId, TraceInput};
use kineto_trace::GRAPH_REPLAY_PREFIX;
use kineto_trace::correlate::is_graph_launch;
use kineto_trace::summary::copy_kind;

/// The serving engine a trace comes from, from its step markers and Python step functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    /// vLLM (V0 or V1; its markers or `vllm/` step functions).
    Vllm,
    /// SGLang.
    Sglang,
    /// TensorRT-LLM.
    TrtLlm,
}

/// The GPU's tensor-core generation as its fp32 GEMM kernels' names or the device's name say; ordered
/// oldest first (the newest a trace's kernels name is the floor of its GPU's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TensorCores {
    /// Volta or Turing: fp16 tensor cores, no TF32 or bf16.
    Fp16Only,
    /// Ampere or later: TF32 and bf16 tensor cores.
    Tf32AndBf16,
}

/// The data-parallel wrapper a training trace runs under, from its `record_function` annotations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataParallel {
    /// `DistributedDataParallel` (its forward is annotated `DistributedDataParallel.forward`).
    Ddp,
    /// FSDP1, `FullyShardedDataParallel` (annotated `FullyShardedDataParallel.forward`).
    Fsdp,
}

/// What the trace shows that selects a fix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Facts {
    /// The serving engine, if any.
    pub server: Option<Server>,
    /// The GPU's tensor cores, where known.
    pub tensor_cores: Option<TensorCores>,
    /// Whether the steps' host↔device copies include pageable (unpinned) ones.
    pub pageable_copies: bool,
    /// Whether the trace replays CUDA/HIP graphs (a graph launch call, or a whole-graph replay op):
    /// graphs are already in use, so "replay graphs" is no fix.
    pub graph_replays: bool,
    /// Whether the trace runs `torch.compile`'s (Inductor's) generated Triton kernels
    /// (`triton_poi_fused…`, `triton_red_fused…`, `triton_per_fused…`): the model is compiled already.
    pub compiled: bool,
    /// Whether some GEMM already runs on the tensor cores in TF32 (`tf32` in its name): TF32 is on.
    pub tf32_gemms: bool,
    /// The data-parallel wrapper, if the trace shows one.
    pub data_parallel: Option<DataParallel>,
    /// Whether the batches come from a `DataLoader` with no worker processes
    /// (`enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__`).
    pub single_process_loader: bool,
}

/// One condition of a catalogue entry; an entry applies when all of its conditions hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// The trace is of this serving engine.
    Server(Server),
    /// The trace is of no serving engine the doctor knows (a training or inference script).
    NoServer,
    /// The GPU has these tensor cores.
    TensorCores(TensorCores),
    /// The steps copy from or to pageable host memory.
    PageableCopies,
    /// The trace replays no graph: the launches are all eager.
    NoGraphReplays,
    /// The trace runs no `torch.compile`-generated kernel.
    NotCompiled,
    /// The trace runs `torch.compile`-generated kernels.
    Compiled,
    /// No GEMM of the trace runs in TF32.
    NoTf32Gemms,
    /// The trace runs under this data-parallel wrapper.
    DataParallel(DataParallel),
    /// The batches come from a `DataLoader` without worker processes.
    SingleProcessLoader,
}

impl When {
    fn holds(self, f: &Facts) -> bool {
        match self {
            When::Server(s) => f.server == Some(s),
            When::NoServer => f.server.is_none(),
            When::TensorCores(g) => f.tensor_cores == Some(g),
            When::PageableCopies => f.pageable_copies,
            When::NoGraphReplays => !f.graph_replays,
            When::NotCompiled => !f.compiled,
            When::Compiled => f.compiled,
            When::NoTf32Gemms => !f.tf32_gemms,
            When::DataParallel(d) => f.data_parallel == Some(d),
            When::SingleProcessLoader => f.single_process_loader,
        }
    }
}

/// One entry of the catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fix {
    /// The finding it fixes.
    pub finding: FindingId,
    /// The conditions selecting it, all of which must hold (none: always, for its finding). Each
    /// checks the evidence the change presumes: "replay graphs" only where no graph is replayed,
    /// "compile" only where nothing is compiled, "turn TF32 on" only where no GEMM runs in TF32.
    pub when: &'static [When],
    /// The change to make, in one line.
    pub change: &'static str,
    /// Where the framework documents it (docs or code).
    pub source: &'static str,
}

const VLLM_GRAPHS: &str = "https://docs.vllm.ai/en/latest/design/cuda_graphs.html";
const SGLANG_ARGS: &str = "https://docs.sglang.ai/advanced_features/server_arguments.html";
const TRTLLM_GRAPHS: &str =
    "https://nvidia.github.io/TensorRT-LLM/torch/features/cuda_graph_and_padding.html";
const TORCH_COMPILE: &str = "https://pytorch.org/docs/stable/generated/torch.compile.html";
const TORCH_SYNC: &str =
    "https://pytorch.org/docs/stable/generated/torch.cuda.set_sync_debug_mode.html";
const TORCH_PINNED: &str =
    "https://pytorch.org/docs/stable/notes/cuda.html#use-pinned-memory-buffers";
const TORCH_TF32: &str = "https://pytorch.org/docs/stable/notes/cuda.html#tensorfloat-32-tf32-on-ampere-and-later-devices";
const TORCH_AMP: &str = "https://pytorch.org/docs/stable/amp.html";
const TORCH_DATA: &str = "https://pytorch.org/docs/stable/data.html#memory-pinning";
const TORCH_DDP: &str =
    "https://pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html";
const TORCH_FSDP: &str = "https://pytorch.org/docs/stable/notes/fsdp.html";

const VLLM_REPLAY: &str = "replay CUDA graphs: engine arg `enforce_eager` off, `cudagraph_mode` FULL_AND_PIECEWISE (the default), capture sizes covering the batches";
const SGLANG_REPLAY: &str = "replay CUDA graphs: server arg `disable_cuda_graph` off, `cuda_graph_max_bs` covering the decode batches";
const TRTLLM_REPLAY: &str = "replay CUDA graphs for generation: `cuda_graph_config` with `batch_sizes` (or `max_batch_size`) covering the batches";

/// The catalogue, in the order entries are tried per finding.
pub const FIXES: &[Fix] = &[
    Fix {
        finding: FindingId::LaunchBoundIdle,
        when: &[When::Server(Server::Vllm), When::NoGraphReplays],
        change: VLLM_REPLAY,
        source: VLLM_GRAPHS,
    },
    Fix {
        finding: FindingId::LaunchBoundIdle,
        when: &[When::Server(Server::Sglang), When::NoGraphReplays],
        change: SGLANG_REPLAY,
        source: SGLANG_ARGS,
    },
    Fix {
        finding: FindingId::LaunchBoundIdle,
        when: &[When::Server(Server::TrtLlm), When::NoGraphReplays],
        change: TRTLLM_REPLAY,
        source: TRTLLM_GRAPHS,
    },
    Fix {
        finding: FindingId::LaunchBoundIdle,
        when: &[When::NoServer, When::NoGraphReplays],
        change: "launch fewer kernels per step: `torch.compile(model, mode=\"reduce-overhead\")` fuses them and replays CUDA/HIP graphs",
        source: TORCH_COMPILE,
    },
    Fix {
        finding: FindingId::SyncBlockedIdle,
        when: &[],
        change: "remove the host sync inside the step (`.item()`, `.cpu()`, `.tolist()`, `torch.cuda.synchronize()`, a blocking copy): keep the value on the GPU or read it after the step; `torch.cuda.set_sync_debug_mode(\"warn\")` names the call",
        source: TORCH_SYNC,
    },
    Fix {
        finding: FindingId::BetweenSteps,
        when: &[When::NoServer, When::SingleProcessLoader],
        change: "load the next batch while this one runs: `DataLoader(num_workers>0, pin_memory=True, persistent_workers=True)` (the trace's loader has no workers), copies with `non_blocking=True`",
        source: TORCH_DATA,
    },
    Fix {
        finding: FindingId::ExposedComm,
        when: &[When::DataParallel(DataParallel::Ddp)],
        change: "overlap DDP's gradient all-reduce with backward: a smaller `bucket_cap_mb` (default 25) starts the first buckets earlier; or fewer bytes with `ddp.register_comm_hook(None, default_hooks.bf16_compress_hook)`",
        source: TORCH_DDP,
    },
    Fix {
        finding: FindingId::ExposedComm,
        when: &[When::DataParallel(DataParallel::Fsdp)],
        change: "prefetch FSDP's all-gathers: `FullyShardedDataParallel(..., backward_prefetch=BackwardPrefetch.BACKWARD_PRE, forward_prefetch=True)` (forward prefetch for a static graph only)",
        source: TORCH_FSDP,
    },
    Fix {
        finding: FindingId::ShortKernels,
        when: &[When::Server(Server::Vllm), When::NoGraphReplays],
        change: VLLM_REPLAY,
        source: VLLM_GRAPHS,
    },
    Fix {
        finding: FindingId::ShortKernels,
        when: &[When::Server(Server::Sglang), When::NoGraphReplays],
        change: SGLANG_REPLAY,
        source: SGLANG_ARGS,
    },
    Fix {
        finding: FindingId::ShortKernels,
        when: &[When::Server(Server::TrtLlm), When::NoGraphReplays],
        change: TRTLLM_REPLAY,
        source: TRTLLM_GRAPHS,
    },
    Fix {
        finding: FindingId::ShortKernels,
        when: &[When::NoServer, When::NoGraphReplays, When::NotCompiled],
        change: "fuse the short kernels: `torch.compile(model)` (mode=\"reduce-overhead\" also replays them as a graph)",
        source: TORCH_COMPILE,
    },
    Fix {
        finding: FindingId::ShortKernels,
        when: &[When::NoServer, When::NoGraphReplays, When::Compiled],
        change: "replay the compiled kernels as a graph: `torch.compile(model, mode=\"reduce-overhead\")` (the model is compiled, its launches eager)",
        source: TORCH_COMPILE,
    },
    Fix {
        finding: FindingId::EagerSteps,
        when: &[When::Server(Server::Vllm)],
        change: "capture graphs for these batch sizes: raise `compilation_config.max_cudagraph_capture_size` (or list `cudagraph_capture_sizes`)",
        source: VLLM_GRAPHS,
    },
    Fix {
        finding: FindingId::EagerSteps,
        when: &[When::Server(Server::Sglang)],
        change: "capture graphs for these batch sizes: raise server arg `cuda_graph_max_bs` (or list `cuda_graph_bs`)",
        source: SGLANG_ARGS,
    },
    Fix {
        finding: FindingId::EagerSteps,
        when: &[When::Server(Server::TrtLlm)],
        change: "capture graphs for these batch sizes: add them to `cuda_graph_config.batch_sizes` (or raise `max_batch_size`)",
        source: TRTLLM_GRAPHS,
    },
    Fix {
        finding: FindingId::CopiesInStep,
        when: &[When::PageableCopies],
        change: "pin the host buffers (`tensor.pin_memory()`, `DataLoader(pin_memory=True)`) and copy with `non_blocking=True`",
        source: TORCH_PINNED,
    },
    Fix {
        finding: FindingId::CopiesInStep,
        when: &[],
        change: "copy ahead of use: `non_blocking=True` from pinned memory on a side stream (prefetch), or keep the data on the device",
        source: TORCH_PINNED,
    },
    Fix {
        finding: FindingId::SimtGemm,
        when: &[
            When::TensorCores(TensorCores::Tf32AndBf16),
            When::NoTf32Gemms,
        ],
        change: "use the tensor cores: `torch.backends.cuda.matmul.allow_tf32 = True` (or `torch.set_float32_matmul_precision(\"high\")`), or bf16 under `torch.autocast`",
        source: TORCH_TF32,
    },
    Fix {
        finding: FindingId::SimtGemm,
        when: &[When::TensorCores(TensorCores::Fp16Only)],
        change: "use the fp16 tensor cores: `torch.autocast(\"cuda\", dtype=torch.float16)` with a `GradScaler` (no TF32 or bf16 before Ampere)",
        source: TORCH_AMP,
    },
];

/// What a finding with no catalogued fix says in the `fix` column.
pub const NO_FIX: &str = "no catalogued fix";

/// The fix of a finding: the first catalogue entry for it whose condition holds.
pub fn select(id: FindingId, facts: &Facts) -> Option<&'static Fix> {
    FIXES
        .iter()
        .find(|f| f.finding == id && f.when.iter().all(|w| w.holds(facts)))
}

/// The facts of one trace.
pub fn facts(t: &TraceInput<'_>) -> Facts {
    let steps = &t.analysis.steps;
    let tr = t.trace;
    let pageable_copies = steps.steps.iter().any(|s| {
        let mut copies = tr.memcpys.reader();
        s.memcpys.iter().any(|&m| {
            let name = tr.name(copies.row(m as usize).name);
            name.contains("Pageable") && matches!(copy_kind(name), "HtoD" | "DtoH")
        })
    });
    // `record_function` annotations land in `cpu_op` or `user_annotation` by the PyTorch version.
    let annotation_names = tr.range_names();
    let annotated =
        |p: &dyn Fn(&str) -> bool| annotation_names.iter().any(|&name| p(tr.name(name)));
    // The kernels' distinct names, in one pass (each pass decodes every kernel): the questions below
    // are asked of them.
    let kernel_names: std::collections::HashSet<kineto_trace::Sym> =
        tr.kernels.iter().map(|k| k.name).collect();
    let kernel_named = |p: &dyn Fn(&str) -> bool| kernel_names.iter().any(|&name| p(tr.name(name)));
    let graph_replays = tr.launches.iter().any(|l| is_graph_launch(tr.name(l.name)))
        || kernel_named(&|n| n.starts_with(GRAPH_REPLAY_PREFIX));
    let compiled = kernel_named(&|n| {
        ["triton_poi_fused", "triton_red_fused", "triton_per_fused"]
            .iter()
            .any(|p| n.starts_with(p))
    });
    let tf32_gemms = kernel_named(&|n| {
        let n = n.to_ascii_lowercase();
        n.contains("gemm") && n.contains("tf32")
    });
    let data_parallel = if annotated(&|n| n == "FullyShardedDataParallel.forward") {
        Some(DataParallel::Fsdp)
    } else if annotated(&|n| n == "DistributedDataParallel.forward") {
        Some(DataParallel::Ddp)
    } else {
        None
    };
    let single_process_loader =
        annotated(&|n| n.starts_with("enumerate(DataLoader)#_SingleProcessDataLoaderIter"));
    Facts {
        server: server(t),
        tensor_cores: tensor_cores(t),
        pageable_copies,
        graph_replays,
        compiled,
        tf32_gemms,
        data_parallel,
        single_process_loader,
    }
}

fn server(t: &TraceInput<'_>) -> Option<Server> {
    let by_profile = match t.analysis.steps.profile.as_deref() {
        // `tracelens` markers are vLLM's and TraceLens's patched SGLang's alike: no server by themselves.
        Some("vllm" | "vllm-python") => Some(Server::Vllm),
        Some("sglang" | "sglang-python") => Some(Server::Sglang),
        Some("trtllm" | "trtllm-python") => Some(Server::TrtLlm),
        _ => None,
    };
    by_profile.or_else(|| {
        let tr = t.trace;
        tr.python_functions.iter().find_map(|p| {
            let n = tr.name(p.name);
            if n.contains("vllm/") {
                Some(Server::Vllm)
            } else if n.contains("sglang/") {
                Some(Server::Sglang)
            } else if n.contains("tensorrt_llm/") {
                Some(Server::TrtLlm)
            } else {
                None
            }
        })
    })
}

/// The tensor cores: from the device's name where the trace names it (`deviceProperties`), else from the
/// newest arch prefix among cuBLAS/CUTLASS kernel names (`volta_`, `turing_`, `sm70_`, `sm75_` before
/// `ampere_`, `sm80_`…`sm120_`). The device decides first because a GPU runs kernels built for older
/// architectures too (a kernel's arch prefix is the oldest it was built for: CUTLASS's kernels carry a
/// `min_cc`, e.g. `cutlass_simt_sgemm_…` run on an A10 with `--min_cc=50`, NVIDIA/cutlass#941), never
/// newer ones: so
/// among kernel names the newest generation seen is the floor of the GPU's, whichever kernel comes first.
fn tensor_cores(t: &TraceInput<'_>) -> Option<TensorCores> {
    let tr = t.trace;
    let by_device = tr
        .header
        .devices
        .iter()
        .find_map(|d| d.name.as_deref())
        .and_then(tensor_cores_of_device);
    by_device.or_else(|| {
        tr.kernels
            .iter()
            .filter_map(|k| tensor_cores_of_kernel(tr.name(k.name)))
            .max()
    })
}

/// The tensor cores of a device named `name` (CUDA's device name), where the name says.
fn tensor_cores_of_device(name: &str) -> Option<TensorCores> {
    if ["V100", "T4", "RTX 20", "Quadro RTX", "TITAN V"]
        .iter()
        .any(|m| name.contains(m))
    {
        Some(TensorCores::Fp16Only)
    } else if [
        "A100", "A10", "A30", "A40", "H100", "H200", "H20", "L4", "L40", "B200", "GB200", "GB10",
        "RTX 30", "RTX 40", "RTX A",
    ]
    .iter()
    .any(|m| name.contains(m))
    {
        Some(TensorCores::Tf32AndBf16)
    } else {
        None
    }
}

/// The tensor cores a kernel's arch prefix implies (at least: see [`tensor_cores`]): cuBLAS's
/// `volta_`/`turing_`/`ampere_` names, and the `smNN_` prefix of cuBLAS's and CUTLASS's newer ones
/// (compute capability NN: tensor cores with TF32 and bf16 from 8.0, Ampere).
fn tensor_cores_of_kernel(name: &str) -> Option<TensorCores> {
    if name.starts_with("volta_") || name.starts_with("turing_") {
        return Some(TensorCores::Fp16Only);
    }
    if name.starts_with("ampere_") {
        return Some(TensorCores::Tf32AndBf16);
    }
    let (digits, _) = name.strip_prefix("sm")?.split_once('_')?;
    if digits.len() < 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let cc: u32 = digits.parse().ok()?;
    match cc {
        70..=79 => Some(TensorCores::Fp16Only),
        80.. => Some(TensorCores::Tf32AndBf16),
        _ => None,
    }
}

/// Sets the fix of every finding of trace `t`.
pub(crate) fn set(t: &TraceInput<'_>, findings: &mut [Finding]) {
    let f = facts(t);
    for x in findings.iter_mut().filter(|x| x.file == t.file) {
        x.fix = select(x.id, &f);
    }
}
