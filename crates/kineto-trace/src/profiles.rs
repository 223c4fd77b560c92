//! What stock serving engines leave in a trace once per engine step, read from their source: the
//! annotations they write, the Python functions of their step loops (as PyTorch's `with_stack` writes
//! them, category `python_function`), the top-level model module (`with_modules`), and the GEMM ops whose
//! input rows are a step's tokens. [`crate::step`] turns them into steps; `docs/steps-and-budgets.md` §2
//! says which server version each name was read from.
//!
//! A Python function is matched by its identity — the file's path *suffix* (at a `/` boundary, so any
//! install prefix matches: `site-packages/`, `dist-packages/`, an editable checkout) and the function
//! name — never by the whole event name, whose line number changes with every release.

/// One Python function of a server's step loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PyFunction {
    /// The file, relative to the package root: `vllm/v1/worker/gpu_model_runner.py`.
    pub path: &'static str,
    /// The function (PyTorch writes the code object's name, no class).
    pub function: &'static str,
    /// What a call of it is.
    pub role: PyRole,
}

/// What one call of a step function is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PyRole {
    /// It starts a step (and ends it, unless a tail follows).
    Step,
    /// It finishes the step before it: since vLLM split sampling from execution it samples in
    /// `sample_tokens`, called after `execute_model` of the same step. A tail before any step is not
    /// a step.
    Tail,
}

const fn step(path: &'static str, function: &'static str) -> PyFunction {
    PyFunction {
        path,
        function,
        role: PyRole::Step,
    }
}

const fn tail(path: &'static str, function: &'static str) -> PyFunction {
    PyFunction {
        path,
        function,
        role: PyRole::Tail,
    }
}

/// vLLM: the worker's and the model runner's `execute_model` — V1 (`vllm/v1/worker/gpu_worker.py`,
/// `gpu_model_runner.py`, and the second-generation runner `vllm/v1/worker/gpu/model_runner.py`), V0
/// (`vllm/worker/worker_base.py` `LocalOrDistributedWorkerBase`, `vllm/worker/model_runner.py`) — and the
/// `sample_tokens` that finishes a V1 step since execution and sampling were split. The worker's call
/// wraps the runner's (pipeline-parallel receive and send included); nested calls count once.
pub const VLLM_FUNCTIONS: &[PyFunction] = &[
    step("vllm/v1/worker/gpu_worker.py", "execute_model"),
    tail("vllm/v1/worker/gpu_worker.py", "sample_tokens"),
    step("vllm/v1/worker/gpu_model_runner.py", "execute_model"),
    tail("vllm/v1/worker/gpu_model_runner.py", "sample_tokens"),
    step("vllm/v1/worker/gpu/model_runner.py", "execute_model"),
    tail("vllm/v1/worker/gpu/model_runner.py", "sample_tokens"),
    step("vllm/worker/worker_base.py", "execute_model"),
    step("vllm/worker/model_runner.py", "execute_model"),
];

/// SGLang: `ModelRunner.forward`, the one entry every batch's forward goes through (extend, decode,
/// idle, CUDA-graph replay), on whichever thread runs it (the overlap scheduler's forward thread).
/// Before v0.2 the runner lived in `managers/controller/`.
pub const SGLANG_FUNCTIONS: &[PyFunction] = &[
    step("sglang/srt/model_executor/model_runner.py", "forward"),
    step("sglang/srt/managers/controller/model_runner.py", "forward"),
];

/// TensorRT-LLM's PyTorch backend: `PyExecutor._forward_step`, called once per executor-loop iteration
/// (overlap, non-overlap and pipeline-parallel loops alike). Its profiler sets `with_modules`, not
/// `with_stack`, so a stock trace has these only when the stack was asked for.
pub const TRTLLM_FUNCTIONS: &[PyFunction] = &[step(
    "tensorrt_llm/_torch/pyexecutor/py_executor.py",
    "_forward_step",
)];

/// The Python step profiles, in the order they are tried: (profile name, functions).
pub const PYTHON_PROFILES: &[(&str, &[PyFunction])] = &[
    ("vllm-python", VLLM_FUNCTIONS),
    ("sglang-python", SGLANG_FUNCTIONS),
    ("trtllm-python", TRTLLM_FUNCTIONS),
];

/// The function a `python_function` event names, when it is one of a profile's:
/// `path/to/file.py(LINE): func`, the path matched by suffix at a `/` (or `\`) boundary.
pub fn python_function(name: &str) -> Option<(&'static str, &'static PyFunction)> {
    let (left, func) = name.rsplit_once("): ")?;
    let (path, line) = left.rsplit_once('(')?;
    if line.is_empty() || !line.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // A qualified name (`GPUModelRunner.execute_model`) names the same function.
    let func = func.rsplit_once('.').map_or(func, |(_, f)| f);
    for (profile, functions) in PYTHON_PROFILES {
        for f in *functions {
            if f.function == func && path_ends_with(path, f.path) {
                return Some((profile, f));
            }
        }
    }
    None
}

/// Whether `path` is `suffix` or ends with `/suffix` (either separator).
fn path_ends_with(path: &str, suffix: &str) -> bool {
    let (p, s) = (path.as_bytes(), suffix.as_bytes());
    if p.len() < s.len() {
        return false;
    }
    let at = p.len() - s.len();
    let same = p[at..]
        .iter()
        .zip(s)
        .all(|(&a, &b)| a == b || (a == b'\\' && b == b'/'));
    same && (at == 0 || matches!(p[at - 1], b'/' | b'\\'))
}

/// The prefix PyTorch gives a module's forward call (`with_modules`, and with `with_stack`).
pub const MODULE_PREFIX: &str = "nn.Module: ";

/// Class-name endings of a whole language model (the module one forward of a serving step calls once):
/// Hugging Face's and the servers' own model classes alike (`LlamaForCausalLM`, `GptOssForCausalLM`,
/// `Qwen2VLForConditionalGeneration`, `GPT2LMHeadModel`).
pub const MODEL_CLASS_ENDINGS: &[&str] =
    &["ForCausalLM", "ForConditionalGeneration", "LMHeadModel"];

/// Whether a span is the forward of a whole model: `nn.Module: <Class>` or `nn.Module: <Class>_<N>`
/// with a class name ending as [`MODEL_CLASS_ENDINGS`] says.
pub fn is_model_forward(name: &str) -> bool {
    let Some(class) = name.strip_prefix(MODULE_PREFIX) else {
        return false;
    };
    let class = match class.rsplit_once('_') {
        Some((c, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => c,
        _ => class,
    };
    MODEL_CLASS_ENDINGS
        .iter()
        .any(|e| class.len() > e.len() && class.ends_with(e))
}

/// Whether a reader keeps a `python_function` event in `Trace::python_functions`: every one when all
/// frames are asked for (`Options::python_frames`), else those [`keep_python_event`] keeps; the rest
/// are only counted. The Kineto parser and the Chrome-array reader both ask it.
pub fn keep_python_frame(all: bool, name: &[u8]) -> bool {
    all || keep_python_event(name)
}

/// Whether the parser keeps a `python_function` event: a profile's step function or a model forward.
/// The test runs on every such event of a `with_stack` trace, so it looks at the name's end first.
pub fn keep_python_event(name: &[u8]) -> bool {
    const ENDINGS: &[&[u8]] = &[
        b"execute_model",
        b"sample_tokens",
        b"forward",
        b"_forward_step",
    ];
    if name.starts_with(MODULE_PREFIX.as_bytes()) {
        return std::str::from_utf8(name).is_ok_and(is_model_forward);
    }
    ENDINGS.iter().any(|e| name.ends_with(e))
        && std::str::from_utf8(name).is_ok_and(|n| python_function(n).is_some())
}

/// GEMM ops whose activation input's rows are the tokens a step multiplies: (op, index of that input in
/// `Input Dims`). `aten::addmm(bias, mat1, mat2)` takes it second, vLLM's
/// `_C::cutlass_scaled_mm(out, a, b, …)` too; the others first. Batched products (`bmm`, `matmul` of
/// attention) are not token GEMMs and are left out.
pub const GEMM_OPS: &[(&str, usize)] = &[
    ("aten::mm", 0),
    ("aten::addmm", 1),
    ("aten::linear", 0),
    ("aten::_scaled_mm", 0),
    ("_C::cutlass_scaled_mm", 1),
];

/// The input of a GEMM op whose rows are tokens, when `name` is one of [`GEMM_OPS`].
pub fn gemm_input(name: &[u8]) -> Option<usize> {
    GEMM_OPS
        .iter()
        .find(|(op, _)| op.as_bytes() == name)
        .map(|&(_, i)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_functions_by_identity_whatever_the_prefix_and_line() {
        for (name, profile, function) in [
            (
                "vllm/v1/worker/gpu_model_runner.py(3380): execute_model",
                "vllm-python",
                "execute_model",
            ),
            (
                "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_worker.py(12): sample_tokens",
                "vllm-python",
                "sample_tokens",
            ),
            (
                "/workspace/vllm/vllm/worker/model_runner.py(1700): execute_model",
                "vllm-python",
                "execute_model",
            ),
            (
                r"C:\py\Lib\site-packages\sglang\srt\model_executor\model_runner.py(1505): forward",
                "sglang-python",
                "forward",
            ),
            (
                "tensorrt_llm/_torch/pyexecutor/py_executor.py(2210): PyExecutor._forward_step",
                "trtllm-python",
                "_forward_step",
            ),
        ] {
            let (p, f) = python_function(name).unwrap_or_else(|| panic!("{name}"));
            assert_eq!((p, f.function), (profile, function), "{name}");
            assert!(keep_python_event(name.as_bytes()), "{name}");
        }
        for name in [
            // Another file with the same function name, a path that only ends alike, no line.
            "vllm/v1/worker/cpu_model_runner.py(10): execute_model",
            "myvllm/v1/worker/gpu_model_runner.py(10): execute_model",
            "vllm/v1/worker/gpu_model_runner.py: execute_model",
            "vllm/v1/worker/gpu_model_runner.py(3380): execute_model_inner",
            "torch/nn/modules/linear.py(124): forward",
            "<built-in method forward of PyCapsule object at 0x7f>",
        ] {
            assert!(python_function(name).is_none(), "{name}");
            assert!(!keep_python_event(name.as_bytes()), "{name}");
        }
    }

    #[test]
    fn model_forwards_by_class_name() {
        for n in [
            "nn.Module: LlamaForCausalLM_0",
            "nn.Module: GptOssForCausalLM_0",
            "nn.Module: Qwen2VLForConditionalGeneration",
            "nn.Module: GPT2LMHeadModel_3",
        ] {
            assert!(is_model_forward(n), "{n}");
            assert!(keep_python_event(n.as_bytes()), "{n}");
        }
        for n in [
            "nn.Module: LlamaDecoderLayer_0",
            "nn.Module: ForCausalLM_0",
            "nn.Module: LogitsProcessor_0",
            "LlamaForCausalLM_0",
        ] {
            assert!(!is_model_forward(n), "{n}");
        }
    }

    #[test]
    fn gemm_inputs() {
        assert_eq!(gemm_input(b"aten::addmm"), Some(1));
        assert_eq!(gemm_input(b"aten::mm"), Some(0));
        assert_eq!(gemm_input(b"aten::bmm"), None);
    }
}
