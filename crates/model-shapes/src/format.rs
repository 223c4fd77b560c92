//! How one weight matrix is stored, and its bytes: plain floats, fp8 (per tensor, channel or block), grouped
//! integers (AWQ/GPTQ), mxfp4, nvfp4, EXL3. `docs/formulas.md` §16 gives each formula and its source.

use std::fmt;

/// How one weight matrix is stored. Bytes of a matrix of `k` input × `n` output features are given by
/// [`WeightFormat::bytes`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum WeightFormat {
    /// Unquantised elements of `bytes` bytes each (bf16/fp16: 2, fp32: 4; DeepSeek-V4's int64 router
    /// tables: 8).
    Float {
        /// Bytes per element.
        bytes: u64,
        /// `bf16`, `fp16` or `fp32`.
        name: &'static str,
    },
    /// fp8 (E4M3) with one fp32 scale per tensor.
    Fp8PerTensor,
    /// fp8 (E4M3) with one fp32 scale per output feature.
    Fp8PerChannel,
    /// fp8 (E4M3) with one scale per `block_out` × `block_in` block (DeepSeek-V3: 128 × 128, fp32 scales;
    /// DeepSeek-V4: E8M0 scales of one byte, `scale_fmt: ue8m0`).
    Fp8Block {
        /// Block height along the output features.
        block_out: u64,
        /// Block width along the input features.
        block_in: u64,
        /// Bytes per scale: 4 (fp32) or 1 (E8M0).
        scale_bytes: u64,
    },
    /// Integer weights of `bits` bits in groups of `group` input features, one fp16 scale per group and
    /// output feature, and (AWQ, GPTQ) a `bits`-bit zero point per group and output feature.
    IntGroup {
        /// Bits per weight (4 for AWQ/GPTQ int4).
        bits: u64,
        /// Input features per group.
        group: u64,
        /// Whether a packed zero point is stored per group.
        zero_points: bool,
    },
    /// OCP MX fp4 (E2M1) with one E8M0 (1-byte) scale per 32 input features.
    Mxfp4,
    /// NVIDIA nvfp4 (E2M1) with one E4M3 (1-byte) scale per 16 input features and one fp32 scale per tensor.
    Nvfp4,
    /// EXL3 at `bits` bits per weight (possibly fractional for a mixed model): k·n·bits/8 + 2k + 2n.
    Exl3 {
        /// Bits per weight.
        bits: f64,
    },
}

impl WeightFormat {
    /// bf16.
    pub const BF16: WeightFormat = WeightFormat::Float {
        bytes: 2,
        name: "bf16",
    };
    /// fp16.
    pub const FP16: WeightFormat = WeightFormat::Float {
        bytes: 2,
        name: "fp16",
    };
    /// fp32.
    pub const FP32: WeightFormat = WeightFormat::Float {
        bytes: 4,
        name: "fp32",
    };

    /// Bytes of one `k` (input) × `n` (output) matrix in this format, scales included, bias excluded.
    ///
    /// Products of dimensions are taken exactly (in u128) and rounded to f64 once, so no size wraps; a
    /// block or group of 0 (which no reader accepts) counts as 1.
    pub fn bytes(&self, k: u64, n: u64) -> f64 {
        let kn = exact(k, n);
        let (k_f, n_f) = (k as f64, n as f64);
        match *self {
            WeightFormat::Float { bytes, .. } => kn * bytes as f64,
            WeightFormat::Fp8PerTensor => kn + 4.0,
            WeightFormat::Fp8PerChannel => kn + 4.0 * n_f,
            WeightFormat::Fp8Block {
                block_out,
                block_in,
                scale_bytes,
            } => {
                kn + scale_bytes as f64
                    * exact(k.div_ceil(block_in.max(1)), n.div_ceil(block_out.max(1)))
            }
            WeightFormat::IntGroup {
                bits,
                group,
                zero_points,
            } => {
                let groups = exact(k.div_ceil(group.max(1)), n);
                let zeros = if zero_points {
                    groups * bits as f64 / 8.0
                } else {
                    0.0
                };
                kn * bits as f64 / 8.0 + 2.0 * groups + zeros
            }
            WeightFormat::Mxfp4 => kn / 2.0 + exact(k.div_ceil(32), n),
            WeightFormat::Nvfp4 => kn / 2.0 + exact(k.div_ceil(16), n) + 4.0,
            WeightFormat::Exl3 { bits } => kn * bits / 8.0 + 2.0 * (k_f + n_f),
        }
    }

    /// Whether this is a quantised format (not plain floats).
    pub fn is_quantized(&self) -> bool {
        !matches!(self, WeightFormat::Float { .. })
    }
}

/// a·b, exact, rounded to f64 once: what `(a * b) as f64` gives whenever that does not wrap.
pub(crate) fn exact(a: u64, b: u64) -> f64 {
    (u128::from(a) * u128::from(b)) as f64
}

impl fmt::Display for WeightFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WeightFormat::Float { name, .. } => f.write_str(name),
            WeightFormat::Fp8PerTensor => f.write_str("fp8"),
            WeightFormat::Fp8PerChannel => f.write_str("fp8-channel"),
            WeightFormat::Fp8Block {
                block_out,
                block_in,
                scale_bytes,
            } => write!(
                f,
                "fp8-block{block_out}x{block_in}{}",
                if *scale_bytes == 1 { "-e8m0" } else { "" }
            ),
            WeightFormat::IntGroup {
                bits,
                group,
                zero_points,
            } => write!(
                f,
                "int{bits}-g{group}{}",
                if *zero_points { "-zp" } else { "" }
            ),
            WeightFormat::Mxfp4 => f.write_str("mxfp4"),
            WeightFormat::Nvfp4 => f.write_str("nvfp4"),
            WeightFormat::Exl3 { bits } => write!(f, "exl3-{bits}bpw"),
        }
    }
}
