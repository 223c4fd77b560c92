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

/// The counts of a step found by `kineto-trace` (its step profiles read them from the marker). Every
/// phase needs requests, Σ query tokens and Σ KV tokens; Σ sq² and Σ sq·sk may be absent only where
/// they follow (a decode phase of one query token per request: Σ sq² = requests, Σ sq·sk = Σ sk).
/// The error says which count is missing.
pub fn from_step(t: &kineto_trace::step::StepTokens) -> Result<StepTokens, String> {
    let phase = |p: Option<kineto_trace::step::PhaseTokens>,
                 what: &str|
     -> Result<PhaseTokens, String> {
        let Some(p) = p else {
            return Ok(PhaseTokens::default());
        };
        let need = |v: Option<u64>, name: &str| {
            v.ok_or_else(|| format!("the step marker gives no {what} {name}"))
        };
        let requests = need(p.requests, "requests")?;
        let query_tokens = need(p.query_tokens, "query-token count")?;
        let kv_tokens = need(p.context_tokens, "KV-token (context) count")?;
        let one_each = query_tokens == requests;
        let sq_sq = match p.query_sq_sum {
            Some(v) => v,
            None if one_each => requests,
            None => {
                return Err(format!(
                    "the step marker gives no {what} Σ query² (needed unless each request has one query token)"
                ));
            }
        };
        let sq_sk = match p.query_context_sum {
            Some(v) => v,
            None if one_each => kv_tokens,
            None => {
                return Err(format!(
                    "the step marker gives no {what} Σ query·KV (needed unless each request has one query token)"
                ));
            }
        };
        Ok(PhaseTokens {
            requests,
            query_tokens,
            kv_tokens,
            sq_sq,
            sq_sk,
        })
    };
    Ok(StepTokens {
        prefill: phase(t.prefill, "prefill")?,
        decode: phase(t.decode, "decode")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kineto_trace::step as ks;

    #[test]
    fn counts_from_kineto_trace_steps() {
        let decode = ks::PhaseTokens {
            requests: Some(32),
            query_tokens: Some(32),
            context_tokens: Some(55_086),
            query_sq_sum: None,
            query_context_sum: None,
        };
        let t = from_step(&ks::StepTokens {
            prefill: None,
            decode: Some(decode),
        })
        .unwrap();
        assert_eq!(t.decode, PhaseTokens::decode(32, 55_086));
        assert_eq!(t.phase(), "decode");
        assert_eq!(t.decode.causal_pairs(), 55_086.0);
        // A prefill without Σ sq² cannot give its attention FLOPs; SGLang markers give no KV tokens.
        let prefill = ks::PhaseTokens {
            query_tokens: Some(900),
            ..decode
        };
        let e = from_step(&ks::StepTokens {
            prefill: Some(prefill),
            decode: None,
        })
        .unwrap_err();
        assert!(e.contains("prefill Σ query²"), "{e}");
        let sglang = ks::PhaseTokens {
            requests: Some(8),
            query_tokens: Some(8),
            ..Default::default()
        };
        let e = from_step(&ks::StepTokens {
            prefill: None,
            decode: Some(sglang),
        })
        .unwrap_err();
        assert!(e.contains("decode KV-token"), "{e}");
    }

    /// One fresh prefill of 4 tokens: pairs 1 + 2 + 3 + 4 = 10 = 16 − (16 − 4)/2.
    #[test]
    fn causal_pairs_of_a_fresh_prefill() {
        assert_eq!(PhaseTokens::fresh_prefill(1, 4, 16).causal_pairs(), 10.0);
    }
}
