//! Token counts of one serving step: per phase, requests, Σ query tokens, Σ KV tokens and the two sums the
//! causal-attention FLOPs need (TraceLens's `sqsq` = Σ sq², `sqsk` = Σ sq·sk).

use serde::Serialize;

/// One phase's requests in a step. `sq` is a request's query (new) tokens, `sk` its KV tokens (cached
/// context plus the new tokens), as vLLM's TraceLens-style step annotations count them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct PhaseTokens {
    /// Requests.
    pub requests: u64,
    /// Σ sq.
    pub query_tokens: u64,
    /// Σ sk.
    pub kv_tokens: u64,
    /// Σ sq².
    pub sq_sq: u64,
    /// Σ sq·sk.
    pub sq_sk: u64,
}

impl PhaseTokens {
    /// A decode phase: `requests` requests of one query token each, `kv_tokens` KV tokens in all
    /// (Σ sq² = requests, Σ sq·sk = kv_tokens).
    pub fn decode(requests: u64, kv_tokens: u64) -> PhaseTokens {
        PhaseTokens {
            requests,
            query_tokens: requests,
            kv_tokens,
            sq_sq: requests,
            sq_sk: kv_tokens,
        }
    }

    /// A prefill phase of requests with no cached context (`sk = sq`): Σ sq² = Σ sq·sk = `sq_sq`.
    pub fn fresh_prefill(requests: u64, query_tokens: u64, sq_sq: u64) -> PhaseTokens {
        PhaseTokens {
            requests,
            query_tokens,
            kv_tokens: query_tokens,
            sq_sq,
            sq_sk: sq_sq,
        }
    }

    /// (query, key) pairs of causal attention: query j (0-based) of a request with sq new tokens and sk
    /// keys attends to sk − sq + j + 1 keys, so a request has sq·sk − sq·(sq − 1)/2 pairs, and the phase
    /// Σ sq·sk − (Σ sq² − Σ sq)/2. Decode (sq = 1): Σ sk.
    pub fn causal_pairs(&self) -> f64 {
        self.sq_sk as f64 - (self.sq_sq as f64 - self.query_tokens as f64) / 2.0
    }
}

/// The token counts of one step.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct StepTokens {
    /// Requests in prefill (vLLM's "context" phase).
    pub prefill: PhaseTokens,
    /// Requests in decode (vLLM's "generation" phase).
    pub decode: PhaseTokens,
}

impl StepTokens {
    /// Requests in the step (saturating at u64::MAX: a marker's counts are not checked against each other).
    pub fn requests(&self) -> u64 {
        self.prefill.requests.saturating_add(self.decode.requests)
    }

    /// Σ query tokens: the rows every linear layer multiplies (saturating).
    pub fn query_tokens(&self) -> u64 {
        self.prefill
            .query_tokens
            .saturating_add(self.decode.query_tokens)
    }

    /// Σ KV tokens: the keys attention reads (saturating).
    pub fn kv_tokens(&self) -> u64 {
        self.prefill.kv_tokens.saturating_add(self.decode.kv_tokens)
    }

    /// `prefill`, `decode` or `mixed` (`idle` with no requests).
    pub fn phase(&self) -> &'static str {
        match (self.prefill.requests > 0, self.decode.requests > 0) {
            (true, true) => "mixed",
            (true, false) => "prefill",
            (false, true) => "decode",
            (false, false) => "idle",
        }
    }
}

/// What is known of a step's token counts: the totals each term of the estimate needs, and the per-phase
/// counts attention needs when every one of them is known. `None` is a count no source gives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Requests in the step.
    pub requests: Option<u64>,
    /// Σ query tokens: the rows every linear layer multiplies.
    pub query_tokens: Option<u64>,
    /// Σ KV tokens: the keys attention reads.
    pub kv_tokens: Option<u64>,
    /// Every per-phase count, when the sources give them all (a TraceLens-style marker does).
    pub phases: Option<StepTokens>,
    /// `prefill`, `decode`, `mixed` or `idle`, when known.
    pub phase: Option<&'static str>,
    /// Where the counts come from (kineto-trace's token sources, then `given` for the caller's).
    pub from: String,
}

impl From<StepTokens> for Counts {
    fn from(t: StepTokens) -> Counts {
        Counts {
            requests: Some(t.requests()),
            query_tokens: Some(t.query_tokens()),
            kv_tokens: Some(t.kv_tokens()),
            phase: Some(t.phase()),
            phases: Some(t),
            from: String::new(),
        }
    }
}

/// Counts the caller gives for steps whose trace does not say them (the same for every step).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Given {
    /// Σ query tokens of a step.
    pub query_tokens: Option<u64>,
    /// Requests of a step.
    pub requests: Option<u64>,
    /// Σ KV tokens of a step.
    pub kv_tokens: Option<u64>,
}

/// One phase of kineto-trace's counts as the complete phase the per-phase formulas need: requests,
/// Σ query and Σ KV tokens, with Σ sq² and Σ sq·sk where they follow (a phase of one query token per
/// request: Σ sq² = requests, Σ sq·sk = Σ sk). `None` when a count is missing.
fn complete(p: kineto_trace::step::PhaseTokens) -> Option<PhaseTokens> {
    let requests = p.requests?;
    let query_tokens = p.query_tokens?;
    let kv_tokens = p.context_tokens?;
    let one_each = query_tokens == requests;
    let sq_sq = p.query_sq_sum.or(one_each.then_some(requests))?;
    let sq_sk = p.query_context_sum.or(one_each.then_some(kv_tokens))?;
    Some(PhaseTokens {
        requests,
        query_tokens,
        kv_tokens,
        sq_sq,
        sq_sk,
    })
}

/// The counts of a step found by `kineto-trace` (from its marker, its GEMMs' rows or its graph's
/// capture; `Step::tokens_from` names them), the caller's `given` filling what none of them says.
/// Totals are summed over the phases when every phase mentioned has the count, else taken from the
/// counts kineto-trace could not split by phase.
pub fn from_step(step: &kineto_trace::step::Step, given: &Given) -> Counts {
    let t = step.tokens.unwrap_or_default();
    let named: Vec<kineto_trace::step::PhaseTokens> =
        [t.prefill, t.decode].into_iter().flatten().collect();
    let sum = |f: fn(&kineto_trace::step::PhaseTokens) -> Option<u64>| -> Option<u64> {
        (!named.is_empty())
            .then(|| {
                // Saturating: a marker's counts may be anything up to u64::MAX each.
                named
                    .iter()
                    .map(f)
                    .try_fold(0u64, |acc, v| v.map(|v| acc.saturating_add(v)))
            })
            .flatten()
    };
    let unphased =
        |f: fn(&kineto_trace::step::PhaseTokens) -> Option<u64>| t.unphased.and_then(|p| f(&p));
    let mut from = kineto_trace::tokens::describe(&step.tokens_from);
    let mut used_given: Vec<&str> = Vec::new();
    let mut pick = |trace: Option<u64>, g: Option<u64>, what: &'static str| {
        trace.or_else(|| g.inspect(|_| used_given.push(what)))
    };
    let requests = pick(
        sum(|p| p.requests).or(unphased(|p| p.requests)),
        given.requests,
        "requests",
    );
    let query_tokens = pick(
        sum(|p| p.query_tokens).or(unphased(|p| p.query_tokens)),
        given.query_tokens,
        "query tokens",
    );
    let kv_tokens = pick(
        sum(|p| p.context_tokens).or(unphased(|p| p.context_tokens)),
        given.kv_tokens,
        "KV tokens",
    );
    if !used_given.is_empty() {
        if !from.is_empty() {
            from.push_str(" + ");
        }
        from.push_str(&format!("given ({})", used_given.join(", ")));
    }
    let has =
        |p: Option<kineto_trace::step::PhaseTokens>| p.and_then(|p| p.requests).map(|r| r > 0);
    // Per-phase counts: each phase named complete; or a step known to be all decode (no prefill
    // request) whose totals say one query token per request.
    let phases = if !named.is_empty() && t.unphased.is_none() {
        let conv = |p: Option<kineto_trace::step::PhaseTokens>| match p {
            None => Some(PhaseTokens::default()),
            Some(p) => complete(p),
        };
        match (conv(t.prefill), conv(t.decode)) {
            (Some(prefill), Some(decode)) => Some(StepTokens { prefill, decode }),
            _ => None,
        }
    } else {
        None
    };
    let decode_only = has(t.prefill) != Some(true) && (has(t.decode) == Some(true));
    let phases = phases.or_else(|| match (decode_only, requests, query_tokens, kv_tokens) {
        (true, Some(r), Some(q), Some(k)) if r == q => Some(StepTokens {
            prefill: PhaseTokens::default(),
            decode: PhaseTokens::decode(r, k),
        }),
        _ => None,
    });
    let phase = match (has(t.prefill), has(t.decode)) {
        _ if phases.is_some() => phases.map(|p| p.phase()),
        (Some(true), Some(true)) => Some("mixed"),
        (Some(true), _) => Some("prefill"),
        (_, Some(true)) => Some("decode"),
        (Some(false), Some(false)) => Some("idle"),
        _ => None,
    };
    Counts {
        requests,
        query_tokens,
        kv_tokens,
        phases,
        phase,
        from,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kineto_trace::step as ks;

    fn step(tokens: ks::StepTokens) -> ks::Step {
        ks::Step {
            index: 0,
            name: String::new(),
            number: None,
            phase: None,
            phase_from: None,
            rows: None,
            requests: None,
            tokens: Some(tokens),
            tokens_from: Vec::new(),
            unreadable: Vec::new(),
            track: Default::default(),
            cpu_lo_ns: 0,
            cpu_hi_ns: 0,
            lo_ns: None,
            hi_ns: None,
            period_ns: None,
            kernels: Vec::new(),
            memcpys: Vec::new(),
            memsets: Vec::new(),
            kernel_sum_ns: 0,
            kernel_union_ns: 0,
            same_stream_overlaps: 0,
        }
    }

    #[test]
    fn counts_from_kineto_trace_steps() {
        let decode = ks::PhaseTokens {
            requests: Some(32),
            query_tokens: Some(32),
            context_tokens: Some(55_086),
            query_sq_sum: None,
            query_context_sum: None,
        };
        let t = from_step(
            &step(ks::StepTokens {
                prefill: None,
                decode: Some(decode),
                unphased: None,
            }),
            &Given::default(),
        );
        let phases = t.phases.unwrap();
        assert_eq!(phases.decode, PhaseTokens::decode(32, 55_086));
        assert_eq!(
            (t.phase, t.requests, t.kv_tokens),
            (Some("decode"), Some(32), Some(55_086))
        );
        assert_eq!(phases.decode.causal_pairs(), 55_086.0);
        // A prefill without Σ sq² cannot give its attention FLOPs: totals only.
        let prefill = ks::PhaseTokens {
            query_tokens: Some(900),
            ..decode
        };
        let t = from_step(
            &step(ks::StepTokens {
                prefill: Some(prefill),
                decode: None,
                unphased: None,
            }),
            &Given::default(),
        );
        assert_eq!(t.phases, None);
        assert_eq!(
            (t.requests, t.query_tokens, t.kv_tokens),
            (Some(32), Some(900), Some(55_086))
        );
        assert_eq!(t.phase, Some("prefill"));
        // SGLang's decode marker gives no KV tokens: requests and query tokens only, until the
        // caller gives the KV tokens — then one query token per request completes the phase.
        let sglang = ks::PhaseTokens {
            requests: Some(8),
            query_tokens: Some(8),
            ..Default::default()
        };
        let s = step(ks::StepTokens {
            prefill: None,
            decode: Some(sglang),
            unphased: None,
        });
        let t = from_step(&s, &Given::default());
        assert_eq!(
            (t.requests, t.query_tokens, t.kv_tokens, t.phases),
            (Some(8), Some(8), None, None)
        );
        let g = Given {
            kv_tokens: Some(4096),
            ..Given::default()
        };
        let t = from_step(&s, &g);
        assert_eq!(t.phases.unwrap().decode, PhaseTokens::decode(8, 4096));
        assert_eq!(t.from, "given (KV tokens)");
    }

    #[test]
    fn unphased_rows_fill_what_the_phases_do_not_say() {
        // TensorRT-LLM's NVTX range: 2 ctx and 30 gen requests; the GEMMs' rows: 542 tokens.
        let mut s = step(ks::StepTokens {
            prefill: Some(ks::PhaseTokens {
                requests: Some(2),
                ..Default::default()
            }),
            decode: Some(ks::PhaseTokens {
                requests: Some(30),
                ..Default::default()
            }),
            unphased: Some(ks::PhaseTokens {
                query_tokens: Some(542),
                ..Default::default()
            }),
        });
        s.tokens_from = vec![kineto_trace::tokens::TokenSource::Marker {
            profile: "trtllm".into(),
        }];
        let t = from_step(&s, &Given::default());
        assert_eq!(
            (t.requests, t.query_tokens, t.kv_tokens, t.phase),
            (Some(32), Some(542), None, Some("mixed"))
        );
        assert_eq!(t.from, "marker `trtllm`");
        // Nothing at all: the caller's counts, named.
        let t = from_step(
            &step(ks::StepTokens::default()),
            &Given {
                query_tokens: Some(256),
                requests: None,
                kv_tokens: None,
            },
        );
        assert_eq!((t.query_tokens, t.requests), (Some(256), None));
        assert_eq!(t.from, "given (query tokens)");
    }

    /// One fresh prefill of 4 tokens: pairs 1 + 2 + 3 + 4 = 10 = 16 − (16 − 4)/2.
    #[test]
    fn causal_pairs_of_a_fresh_prefill() {
        assert_eq!(PhaseTokens::fresh_prefill(1, 4, 16).causal_pairs(), 10.0);
    }
}
