//! The KL1 rules: the kernel family table (kineto-trace's format, `rules/kl1.toml` by default) and the KL1
//! conventions the analysis adds to it — the step annotation, the prefill structure, and where K sits in
//! a kernel's template arguments.
//!
//! The family table is loaded and validated by `kineto_trace::family::Rules` (families → buckets, ordered
//! patterns, first match wins, every rule's examples checked to reach it), so the same file works with
//! `kineto budget --rules`. On top of that this module checks what the analysis needs: every family it
//! reads by name ([`REQUIRED_FAMILIES`]) is defined — otherwise a misspelt family would silently empty a
//! section of the output — and no family uses a bucket name the output reserves (`idle`, `l2pf`).

use std::collections::HashMap;
use std::path::Path;

use kineto_trace::step::StepPattern;
use kl1_shapes::Bits;

use crate::Error;

/// The built-in KL1 family table, as text.
pub const KL1_RULES_TOML: &str = include_str!("../rules/kl1.toml");

/// The KL1 server's step annotation (docs/kl1-window.md), e.g. `kl1.step#1207 phase=decode rows=2
/// requests=1`. Matched against the whole `user_annotation` (or `cpu_op`) name. `requests` may be left out
/// (a prefill marker needs none; a decode step without it lacks the keys that need it).
pub const KL1_STEP_PATTERN: &str = r"kl1\.step#(?P<step>\d+) phase=(?P<phase>decode|prefill) rows=(?P<rows>\d+)(?: requests=(?P<requests>\d+))?";

/// Families the analysis reads by name; every rule table must define them.
pub const REQUIRED_FAMILIES: [&str; 16] = [
    "mrow",
    "mrow_head",
    "exl3_gemm",
    "reconstruct",
    "reconstruct_had",
    "hc_prenorm",
    "router",
    "route_topk",
    "smoe_rot",
    "smoe_gu",
    "smoe_down",
    "smoe_fused",
    "tf_gu",
    "tf_down",
    "tf_aux",
    "l2pf",
];

/// Families whose kernels carry the EXL3 bit width K as a template argument, and its position (0-based):
/// `exl3_mrow_kernel<K, …>`, `exl3_mrow_head_kernel<K, …>`, `exl3_gemm_kernel<K, …>` (exllamav3
/// `exl3_kernel_map.cuh:7-15`, `bits` first), `reconstruct_kernel<K, cb>` and `reconstruct_had_kernel<K, cb>`
/// (`reconstruct.cu:11-19,157-167`).
pub const K_ARG: [(&str, usize); 5] = [
    ("mrow", 0),
    ("mrow_head", 0),
    ("exl3_gemm", 0),
    ("reconstruct", 0),
    ("reconstruct_had", 0),
];

/// Family and bucket of kernels no rule matches.
pub const UNMATCHED: &str = kineto_trace::family::UNMATCHED;

/// The bucket the `l2pf` family is moved to in the `l2pf_apart` split; no family may use it.
pub const L2PF_BUCKET: &str = "l2pf";

/// The key the split sections use for idle time; no bucket may be called that.
const IDLE: &str = "idle";

/// A family's index in [`Kl1Rules::families`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Kl1FamilyId(pub(crate) u16);

/// A bucket's index in [`Kl1Rules::buckets`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BucketId(pub(crate) u16);

/// One kernel family.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kl1Family {
    /// Its name (`mrow`, `smoe_gu`, …).
    pub name: String,
    /// The bucket its time is accounted to.
    pub bucket: BucketId,
    /// Which template argument of the demangled name (0-based) is the bit width K, if any ([`K_ARG`]).
    pub k_arg: Option<usize>,
}

/// The prefill structure the `tf` section assumes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prefill {
    /// MoE layers that run every prompt row: the seed's FULL_LAYERS = 20 (DeepSeek-V4.1-Flash's 20 ratio-1
    /// layers, domain.md §4, inferred).
    pub full_layers: u64,
    /// Rows the remaining layers run: the seed's SUFFIX_ROWS = 128 (V4.1-Flash's 128-token sliding window,
    /// inferred).
    pub suffix_rows: u64,
    /// Prefill steps with fewer rows are not analysed: the seed's `rows < 1024` cut (short chunks are
    /// launch-bound, not bandwidth-bound).
    pub min_rows: u64,
}

impl Default for Prefill {
    fn default() -> Prefill {
        Prefill {
            full_layers: 20,
            suffix_rows: 128,
            min_rows: 1024,
        }
    }
}

/// A validated family table with the KL1 conventions.
#[derive(Debug, Clone)]
pub struct Kl1Rules {
    table: kineto_trace::family::Rules,
    step_pattern: StepPattern,
    prefill: Prefill,
    families: Vec<Kl1Family>,
    buckets: Vec<String>,
    by_name: HashMap<String, Kl1FamilyId>,
    unmatched: Kl1FamilyId,
}

impl Kl1Rules {
    /// The built-in KL1 family table with the KL1 conventions.
    pub fn builtin() -> Kl1Rules {
        // The embedded file is part of this crate and a test loads it; failing here is a build defect.
        #[allow(clippy::expect_used)]
        Kl1Rules::from_toml_str(KL1_RULES_TOML, Path::new("<built-in kl1 rules>"))
            .expect("the built-in KL1 rules are valid (tested)")
    }

    /// Loads a family table (kineto-trace's format) from a file, with the KL1 conventions. The file must be a
    /// regular file of at most [`tool_io::caps::CONFIG`] bytes.
    pub fn from_file(path: &Path) -> Result<Kl1Rules, Error> {
        let text = tool_io::read_input_string(path, "rule file", tool_io::caps::CONFIG)?;
        Kl1Rules::from_toml_str(&text, path)
    }

    /// Loads a family table from TOML text; `origin` names it in errors.
    pub fn from_toml_str(text: &str, origin: &Path) -> Result<Kl1Rules, Error> {
        let table = kineto_trace::family::Rules::parse(text, origin).map_err(|e| Error::Rules {
            origin: origin.display().to_string(),
            reason: e.to_string(),
        })?;
        Kl1Rules::from_table(table)
    }

    /// The KL1 conventions over an already-validated kineto-trace table.
    pub fn from_table(table: kineto_trace::family::Rules) -> Result<Kl1Rules, Error> {
        let origin = table.origin().display().to_string();
        let bad = |reason: String| Error::Rules {
            origin: origin.clone(),
            reason,
        };
        let mut buckets: Vec<String> = Vec::new();
        let mut families: Vec<Kl1Family> = Vec::new();
        for f in table.families() {
            if f.bucket == IDLE || f.bucket == L2PF_BUCKET {
                return Err(bad(format!(
                    "family `{}`: bucket `{}` is reserved (`idle` names idle time; `l2pf` is where the \
                     l2pf_apart split moves the l2pf family)",
                    f.name, f.bucket
                )));
            }
            if f.name.contains('.') || f.bucket.contains('.') {
                return Err(bad(format!(
                    "family `{}` / bucket `{}`: kl1-bandwidth's output keys are dotted paths, so names may not \
                     contain `.`",
                    f.name, f.bucket
                )));
            }
            let bucket = BucketId(intern(&mut buckets, &f.bucket));
            let k_arg = K_ARG.iter().find(|(n, _)| *n == f.name).map(|&(_, p)| p);
            families.push(Kl1Family {
                name: f.name.clone(),
                bucket,
                k_arg,
            });
        }
        for req in REQUIRED_FAMILIES {
            if !families.iter().any(|f| f.name == req) {
                return Err(bad(format!(
                    "family `{req}` is not defined: kl1-bandwidth reads it by name (define it, with a rule \
                     that never matches if your server has no such kernel)"
                )));
            }
        }
        let unmatched = Kl1FamilyId(families.len() as u16);
        families.push(Kl1Family {
            name: UNMATCHED.to_string(),
            bucket: BucketId(intern(&mut buckets, UNMATCHED)),
            k_arg: None,
        });
        intern(&mut buckets, L2PF_BUCKET);
        let by_name = families
            .iter()
            .enumerate()
            .map(|(i, f)| (f.name.clone(), Kl1FamilyId(i as u16)))
            .collect();
        Ok(Kl1Rules {
            table,
            step_pattern: kl1_step_pattern(),
            prefill: Prefill::default(),
            families,
            buckets,
            by_name,
            unmatched,
        })
    }

    /// The same rules with another step pattern (a regex over whole annotation names with the named groups
    /// `phase` and `rows`, and optionally `requests` and `step`; a group may be optional, as in
    /// `(?: requests=(?P<requests>\d+))?`). Without `requests`, decode steps lack the keys that need it
    /// (`smoe.requests`, `smoe.gbps_if_6_per_request`).
    pub fn with_step_pattern(mut self, pattern: &str) -> Result<Kl1Rules, Error> {
        let p = StepPattern::new(pattern).map_err(|e| Error::Rules {
            origin: "step pattern".to_string(),
            reason: e.to_string(),
        })?;
        // StepPattern accepts patterns without the groups; the analysis cannot work without them.
        let re = regex::Regex::new(pattern).map_err(|e| Error::Rules {
            origin: "step pattern".to_string(),
            reason: e.to_string(),
        })?;
        for g in ["phase", "rows"] {
            if !re.capture_names().flatten().any(|n| n == g) {
                return Err(Error::Rules {
                    origin: "step pattern".to_string(),
                    reason: format!(
                        "`{pattern}` has no named group `{g}`: the analysis needs each step's phase and rows \
                         (write (?P<{g}>…))"
                    ),
                });
            }
        }
        self.step_pattern = p;
        Ok(self)
    }

    /// The same rules with another prefill structure.
    pub fn with_prefill(mut self, prefill: Prefill) -> Result<Kl1Rules, Error> {
        if prefill.suffix_rows == 0 {
            return Err(Error::Rules {
                origin: "prefill".to_string(),
                reason: "suffix_rows is 0".to_string(),
            });
        }
        self.prefill = prefill;
        Ok(self)
    }

    /// The kineto-trace family table underneath.
    pub fn table(&self) -> &kineto_trace::family::Rules {
        &self.table
    }

    /// Where the family table came from.
    pub fn origin(&self) -> String {
        self.table.origin().display().to_string()
    }

    /// The step pattern.
    pub fn step_pattern(&self) -> &StepPattern {
        &self.step_pattern
    }

    /// The prefill structure.
    pub fn prefill(&self) -> Prefill {
        self.prefill
    }

    /// Every family, the last being [`UNMATCHED`].
    pub fn families(&self) -> &[Kl1Family] {
        &self.families
    }

    /// A family by id.
    pub fn family(&self, id: Kl1FamilyId) -> &Kl1Family {
        &self.families[usize::from(id.0)]
    }

    /// A family's id by name.
    pub fn family_id(&self, name: &str) -> Option<Kl1FamilyId> {
        self.by_name.get(name).copied()
    }

    /// Every bucket name, indexed by [`BucketId`] (the families' buckets, then `unmatched` and `l2pf`).
    pub fn buckets(&self) -> &[String] {
        &self.buckets
    }

    /// A bucket's name.
    pub fn bucket_name(&self, id: BucketId) -> &str {
        &self.buckets[usize::from(id.0)]
    }

    /// The id of a bucket by name.
    pub fn bucket_id(&self, name: &str) -> Option<BucketId> {
        self.buckets
            .iter()
            .position(|b| b == name)
            .map(|i| BucketId(i as u16))
    }

    /// The family of a kernel name: the first matching rule's, else [`UNMATCHED`].
    pub fn classify(&self, name: &str) -> Kl1FamilyId {
        self.table
            .classify(name)
            .and_then(|id| self.family_id(&self.table.family(id).name))
            .unwrap_or(self.unmatched)
    }

    /// The id of the [`UNMATCHED`] family.
    pub fn unmatched(&self) -> Kl1FamilyId {
        self.unmatched
    }
}

/// The KL1 step pattern, compiled.
fn kl1_step_pattern() -> StepPattern {
    // A constant, tested; failing here would be a build defect.
    #[allow(clippy::expect_used)]
    StepPattern::new(KL1_STEP_PATTERN).expect("the KL1 step pattern compiles (tested)")
}

fn intern(v: &mut Vec<String>, s: &str) -> u16 {
    if let Some(i) = v.iter().position(|x| x == s) {
        return i as u16;
    }
    v.push(s.to_string());
    (v.len() - 1) as u16
}

/// The bit width K at template argument `pos` of a demangled name: an integer in 1..=8. `None` otherwise
/// (no template, no such argument, `0` — exllamav3's marker for mixed K — or out of range).
pub fn template_k(name: &str, pos: usize) -> Option<Bits> {
    let v = kineto_trace::template::template_int(name, pos)?;
    Bits::new(u64::try_from(v).ok()?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn k_from_template_arguments() {
        let n = "void exl3_gemm_kernel<4, false, 1, 16, 32, 128, 4, 3>(__half const*, int)";
        assert_eq!(template_k(n, 0).map(Bits::get), Some(4));
        assert_eq!(template_k(n, 1), None);
        assert_eq!(template_k("void k<0>(int)", 0), None);
        assert_eq!(template_k("void k<9>(int)", 0), None);
        assert_eq!(template_k("void k<6u, 1>(int)", 0).map(Bits::get), Some(6));
        assert_eq!(template_k("_l2_prefetch_kernel", 0), None);
    }

    #[test]
    fn builtin_rules_classify_kl1_names() {
        let r = Kl1Rules::builtin();
        let f = |n: &str| r.family(r.classify(n)).name.clone();
        assert_eq!(f("void exl3_mrow_kernel<4, 8, 1>(int)"), "mrow");
        assert_eq!(f("void exl3_mrow_head_kernel<6, 8, 1>(int)"), "mrow_head");
        assert_eq!(
            f("void reconstruct_had_kernel<4, 1>(int)"),
            "reconstruct_had"
        );
        assert_eq!(f("void reconstruct_kernel<4, 1>(int)"), "reconstruct");
        assert_eq!(f("void routing_gemv_kernel<384>(int)"), "router");
        assert_eq!(f("void routing_std_topk_kernel<384, 6>(int)"), "route_topk");
        assert_eq!(f("_l2_prefetch_kernel"), "l2pf");
        assert_eq!(f("some_kernel_nobody_named"), UNMATCHED);
        let bucket = |fam: &str| {
            r.family_id(fam)
                .map(|id| r.bucket_name(r.family(id).bucket).to_string())
        };
        assert_eq!(bucket("l2pf").as_deref(), Some("routed_moe"));
        assert_eq!(bucket("mrow").as_deref(), Some("dense"));
        assert_eq!(bucket(UNMATCHED).as_deref(), Some(UNMATCHED));
        assert_eq!(
            r.family(r.family_id("mrow").unwrap_or(r.unmatched())).k_arg,
            Some(0)
        );
    }

    #[test]
    fn the_kl1_step_pattern_reads_the_annotation() {
        let r = Kl1Rules::builtin();
        assert!(
            r.step_pattern()
                .is_match("kl1.step#1207 phase=decode rows=2 requests=1")
        );
        // `requests` is optional (a prefill marker needs none); `rows` is not.
        assert!(
            r.step_pattern()
                .is_match("kl1.step#1207 phase=prefill rows=2048")
        );
        assert!(
            !r.step_pattern()
                .is_match("kl1.step#1207 phase=decode requests=1")
        );
        assert!(
            !r.step_pattern()
                .is_match("kl1.step#1207 phase=decode rows=2 requests=")
        );
        assert!(!r.step_pattern().is_match("ProfilerStep#3"));
    }
}
