//! The event categories (`cat`) of Kineto's Chrome-trace events across format eras (`kernel` and 2021's
//! `Kernel`, `cuda_runtime` and `Runtime`, …), told apart once for every reader of such events: the
//! Kineto parser (`parse/event.rs`) and the Chrome-trace array reader (`native/chrome/`).
//!
//! What it is not: what an event of a category holds or how it is read; each reader decides that.

/// What an event is, by its `cat` across format eras: the categories the model keeps, and the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventKind {
    Kernel,
    Memcpy,
    Memset,
    Runtime,
    Driver,
    CpuOp,
    UserAnnotation,
    GpuUserAnnotation,
    /// `python_function` (`with_stack`, `with_modules`): kept only where a step profile needs it.
    PythonFunction,
    Flow,
    Other,
}

/// The kind of an event whose `cat` is `cat`.
pub(crate) fn event_kind(cat: &[u8]) -> EventKind {
    match cat {
        b"kernel" | b"Kernel" => EventKind::Kernel,
        b"gpu_memcpy" | b"Memcpy" => EventKind::Memcpy,
        b"gpu_memset" | b"Memset" => EventKind::Memset,
        // `cuda_api`: nsys2json's CUDA runtime calls (brycelelbach/nsys2json, `parse_cuda_api_events`).
        b"cuda_runtime" | b"Runtime" | b"cuda_api" => EventKind::Runtime,
        b"cuda_driver" => EventKind::Driver,
        b"cpu_op" | b"Operator" => EventKind::CpuOp,
        // `nvtx`: NVTX ranges as nsys2json (chenyu-jiang/nsys2json) writes them, user ranges as
        // Kineto's `user_annotation` are.
        b"user_annotation" | b"nvtx" => EventKind::UserAnnotation,
        // `nvtx-kernel`: nsys2json's NVTX ranges projected onto the GPU (the span of their kernels).
        b"gpu_user_annotation" | b"gpu_user_Annotation" | b"nvtx-kernel" => {
            EventKind::GpuUserAnnotation
        }
        b"python_function" => EventKind::PythonFunction,
        b"ac2g" | b"async_gpu" | b"async_cpu_to_gpu" => EventKind::Flow,
        _ => EventKind::Other,
    }
}
