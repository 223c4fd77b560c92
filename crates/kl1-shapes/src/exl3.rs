//! EXL3 storage: what one quantised linear occupies, whole and per rank, and the reconstruct kernel's
//! shape and traffic read back from its launch grid.
//!
//! Facts: `docs/exl3-and-deepseek-v4.md` §1 (storage) and §2.6 (reconstruct), from
//! `turboderp-org/exllamav3@4f8ad012`.

use crate::Error;

/// The largest matrix dimension accepted anywhere in this crate (2^24 = 16,777,216).
///
/// Real models stay far below it (the largest dimension in DeepSeek-V4 is the 129,280-entry vocabulary); the
/// bound exists so that every byte count below is exact in `u64`: k·n·K ≤ 2^24·2^24·8 = 2^51.
pub const MAX_DIM: u64 = 1 << 24;

/// EXL3 tiles are 16×16 weights (`trellis` shape `(k/16, n/16, 16·K)`), so both dimensions are multiples of 16.
pub const TILE: u64 = 16;

/// A bit width K of an EXL3 tensor: 1..=8 bits per weight (`K = trellis.shape[-1] // 16`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bits(u8);

impl Bits {
    /// Every valid K, ascending.
    pub const ALL: [Bits; 8] = [
        Bits(1),
        Bits(2),
        Bits(3),
        Bits(4),
        Bits(5),
        Bits(6),
        Bits(7),
        Bits(8),
    ];

    /// K, if it is in 1..=8.
    pub fn new(value: u64) -> Result<Bits, Error> {
        match u8::try_from(value) {
            Ok(v @ 1..=8) => Ok(Bits(v)),
            _ => Err(Error::BitsOutOfRange { value }),
        }
    }

    /// K as a number.
    pub fn get(self) -> u8 {
        self.0
    }

    fn wide(self) -> u64 {
        u64::from(self.0)
    }
}

impl std::fmt::Display for Bits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "K={}", self.0)
    }
}

/// How a linear is divided among tensor-parallel ranks (exllamav3 `modules/quant/exl3.py:295-313`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Split {
    /// Every rank holds the whole matrix.
    Replicated,
    /// Output features (n) are divided: each rank holds all of `suh` (2k bytes) and its slice of `svh`.
    Columns,
    /// Input features (k) are divided: each rank holds its slice of `suh` and all of `svh` (2n bytes).
    Rows,
}

/// A matrix shape an EXL3 linear can have: `k` input × `n` output features, both positive multiples of 16
/// and at most [`MAX_DIM`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Shape {
    k: u64,
    n: u64,
}

impl Shape {
    /// A `k × n` shape, if EXL3 can store it.
    pub fn new(k: u64, n: u64) -> Result<Shape, Error> {
        let reason = if k == 0 || n == 0 {
            Some("a dimension is zero".to_string())
        } else if !k.is_multiple_of(TILE) || !n.is_multiple_of(TILE) {
            Some(format!(
                "EXL3 stores 16×16 tiles; both dimensions must be multiples of {TILE}"
            ))
        } else if k > MAX_DIM || n > MAX_DIM {
            Some(format!("a dimension exceeds {MAX_DIM}"))
        } else {
            None
        };
        match reason {
            Some(reason) => Err(Error::Shape { k, n, reason }),
            None => Ok(Shape { k, n }),
        }
    }

    /// Input features.
    pub fn k(self) -> u64 {
        self.k
    }

    /// Output features.
    pub fn n(self) -> u64 {
        self.n
    }

    /// The shape one of `ranks` ranks holds under `split`.
    ///
    /// The divided dimension must split evenly and leave whole 16-wide tiles per rank. exllamav3 divides
    /// linears in 128-channel units; this function does not impose that, because DeepSeek's attention is
    /// divided by output group instead. The spec loader checks the 128-channel rule where it applies.
    pub fn split(self, split: Split, ranks: u64) -> Result<Shape, Error> {
        let err = |reason: String| Error::Shape {
            k: self.k,
            n: self.n,
            reason,
        };
        if ranks == 0 {
            return Err(err("split among 0 ranks".to_string()));
        }
        let (k, n) = match split {
            Split::Replicated => return Ok(self),
            Split::Columns => (self.k, self.n / ranks),
            Split::Rows => (self.k / ranks, self.n),
        };
        let divided = if split == Split::Columns {
            self.n
        } else {
            self.k
        };
        // An absurd rank count must fail as an error, not as an overflow.
        if ranks
            .checked_mul(TILE)
            .is_none_or(|unit| !divided.is_multiple_of(unit))
        {
            return Err(err(format!(
                "{divided} does not divide among {ranks} ranks into whole {TILE}-wide tiles"
            )));
        }
        Shape::new(k, n)
    }
}

/// One EXL3-quantised linear: a [`Shape`] at a bit width K.
///
/// Storage (docs/exl3-and-deepseek-v4.md §1): `trellis` int16 `(k/16, n/16, 16·K)` = k·n·K/8 bytes; `suh` fp16 `(k,)` = 2k bytes;
/// `svh` fp16 `(n,)` = 2n bytes. The `mcg`/`mul1` scalars (4 B, flags never read, `quantize.py:1413-1424`) and
/// any bias are not counted: decode kernels do not read them as weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Exl3Linear {
    shape: Shape,
    bits: Bits,
}

impl Exl3Linear {
    /// A linear of `shape` at `bits`.
    pub fn new(shape: Shape, bits: Bits) -> Exl3Linear {
        Exl3Linear { shape, bits }
    }

    /// Its shape.
    pub fn shape(self) -> Shape {
        self.shape
    }

    /// Its K.
    pub fn bits(self) -> Bits {
        self.bits
    }

    /// Trellis bytes: k·n·K/8. Exact: k·n is a multiple of 256, so k·n·K/8 is a whole number.
    pub fn trellis_bytes(self) -> u64 {
        self.shape.k * self.shape.n * self.bits.wide() / 8
    }

    /// Input sign/scale vector `suh`: 2k bytes (fp16, unpacked; `quantize.py:1401`).
    pub fn suh_bytes(self) -> u64 {
        2 * self.shape.k
    }

    /// Output sign/scale vector `svh`: 2n bytes (fp16; `quantize.py:1402`).
    pub fn svh_bytes(self) -> u64 {
        2 * self.shape.n
    }

    /// Both sign vectors: 2k + 2n bytes.
    pub fn sign_bytes(self) -> u64 {
        self.suh_bytes() + self.svh_bytes()
    }

    /// Everything a pass over the weights reads: k·n·K/8 + 2k + 2n bytes.
    ///
    /// An estimate of a launch's traffic only if the launch streams the weights once (the decode GEMV/m-row
    /// kernels do); kernels that walk rows in 16-row slices re-read them ceil(m/16) times, less what L2 keeps.
    pub fn bytes(self) -> u64 {
        self.trellis_bytes() + self.sign_bytes()
    }
}

/// The two reconstruct (dequantise-to-fp16) kernels of exllamav3 `ext/quant/reconstruct.cu`; their grids
/// map to the tensor shape differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReconstructKernel {
    /// `reconstruct_kernel<K, cb>`: grid `(n_slice/128, k/16)` (`reconstruct.cu:126-130`); reads the trellis
    /// only, the Hadamard runs in later kernels.
    Plain,
    /// `reconstruct_had_kernel<K, cb>`: grid `(n_slice/128, k/128)` (`reconstruct.cu:356-363`); reads the
    /// trellis and both sign vectors.
    Hadamard,
}

/// Bytes a reconstruct launch moves between DRAM and the SMs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReconstructBytes {
    /// Bytes read: the trellis slice, plus `suh` and the `svh` slice for [`ReconstructKernel::Hadamard`].
    pub read: u64,
    /// Bytes written: the fp16 weight slice, 2·k·n_slice.
    pub written: u64,
}

impl ReconstructBytes {
    /// Read plus written: the DRAM traffic a bandwidth figure for this launch should divide.
    pub fn total(self) -> u64 {
        self.read + self.written
    }
}

/// The tensor slice a reconstruct launch dequantises, from its grid `[x, y, z]`.
///
/// [`ReconstructKernel::Plain`]: k = y·16, n_slice = x·128; [`ReconstructKernel::Hadamard`]: k = y·128,
/// n_slice = x·128 (docs/exl3-and-deepseek-v4.md §2.6). Both launch 2-D grids, so z must be 1. Assumes the launch covers the
/// whole k (exllamav3 slices only n, in 32,768-column pieces, `exl3.py:11,192-211`).
pub fn reconstruct_shape(kernel: ReconstructKernel, grid: [u32; 3]) -> Result<Shape, Error> {
    let bad = |reason: &str| Error::Grid {
        grid,
        reason: reason.to_string(),
    };
    if grid[2] != 1 {
        return Err(bad("reconstruct kernels launch a 2-D grid; z must be 1"));
    }
    if grid[0] == 0 || grid[1] == 0 {
        return Err(bad("an empty grid"));
    }
    let rows_per_block = match kernel {
        ReconstructKernel::Plain => 16,
        ReconstructKernel::Hadamard => 128,
    };
    let k = u64::from(grid[1]) * rows_per_block;
    let n = u64::from(grid[0]) * 128;
    Shape::new(k, n).map_err(|e| Error::Grid {
        grid,
        reason: e.to_string(),
    })
}

/// Bytes one reconstruct launch moves: reads k·n·K/8 (trellis) — plus 2k + 2n (sign vectors) for the
/// Hadamard variant — and writes 2·k·n (fp16 weights), with (k, n) from [`reconstruct_shape`].
///
/// Assumes each byte crosses DRAM once; the fp16 output usually stays partly in L2 for the GEMM that follows,
/// so written bytes are an upper bound on write traffic.
///
/// Not read from the weights table ([`crate::Spec::kl1_bytes`]): the slice is whatever the launch's grid
/// says it dequantised, a per-launch shape from the trace, not a tensor of the model.
pub fn reconstruct_bytes(
    kernel: ReconstructKernel,
    grid: [u32; 3],
    bits: Bits,
) -> Result<ReconstructBytes, Error> {
    let shape = reconstruct_shape(kernel, grid)?;
    let linear = Exl3Linear::new(shape, bits);
    let read = match kernel {
        ReconstructKernel::Plain => linear.trellis_bytes(),
        ReconstructKernel::Hadamard => linear.bytes(),
    };
    Ok(ReconstructBytes {
        read,
        written: 2 * shape.k * shape.n,
    })
}
