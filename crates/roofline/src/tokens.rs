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
    /// Requests in the step.
    pub fn requests(&self) -> u64 {
        self.prefill.requests + self.decode.requests
    }

    /// Σ query tokens: the rows every linear layer multiplies.
    pub fn query_tokens(&self) -> u64 {
        self.prefill.query_tokens + self.decode.query_tokens
    }

    /// Σ KV tokens: the keys attention reads.
    pub fn kv_tokens(&self) -> u64 {
        self.prefill.kv_tokens + self.decode.kv_tokens
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

/// Reads the token counts from a vLLM TraceLens-style step name,
/// `execute_<N>_context_<R>(sq<A>sk<B>sqsq<C>sqsk<D>)_generation_<R>(sq<A>sk<B>sqsq<C>sqsk<D>)`.
/// `None` when the name has another form. (Interim: to be replaced by kineto-trace's step profiles.)
pub fn parse_execute_name(name: &str) -> Option<StepTokens> {
    let rest = name.strip_prefix("execute_")?;
    let (_total, rest) = rest.split_once("_context_")?;
    let (prefill, rest) = phase(rest)?;
    let rest = rest.strip_prefix("_generation_")?;
    let (decode, rest) = phase(rest)?;
    if !rest.is_empty() {
        return None;
    }
    Some(StepTokens { prefill, decode })
}

/// `<R>(sq<A>sk<B>sqsq<C>sqsk<D>)` and what follows.
fn phase(text: &str) -> Option<(PhaseTokens, &str)> {
    let (requests, rest) = text.split_once('(')?;
    let (inner, rest) = rest.split_once(')')?;
    let requests = requests.parse().ok()?;
    let mut fields = [0u64; 4];
    let mut s = inner;
    for (i, key) in ["sq", "sk", "sqsq", "sqsk"].iter().enumerate() {
        s = s.strip_prefix(key)?;
        let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
        fields[i] = s[..end].parse().ok()?;
        s = &s[end..];
    }
    if !s.is_empty() {
        return None;
    }
    Some((
        PhaseTokens {
            requests,
            query_tokens: fields[0],
            kv_tokens: fields[1],
            sq_sq: fields[2],
            sq_sk: fields[3],
        },
        rest,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shared_vllm_step_name() {
        let t = parse_execute_name(
            "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk55086sqsq32sqsk55086)",
        )
        .unwrap();
        assert_eq!(t.prefill, PhaseTokens::default());
        assert_eq!(t.decode, PhaseTokens::decode(32, 55_086));
        assert_eq!(t.phase(), "decode");
        assert_eq!(t.decode.causal_pairs(), 55_086.0);
    }

    #[test]
    fn other_names_are_not_steps() {
        for n in [
            "ProfilerStep#3",
            "execute_32_context_0(sq0sk0sqsq0sqsk0)",
            "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk55086sqsq32)",
            "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk55086sqsq32sqsk55086)x",
        ] {
            assert_eq!(parse_execute_name(n), None, "{n}");
        }
    }

    /// One fresh prefill of 4 tokens: pairs 1 + 2 + 3 + 4 = 10 = 16 − (16 − 4)/2.
    #[test]
    fn causal_pairs_of_a_fresh_prefill() {
        assert_eq!(PhaseTokens::fresh_prefill(1, 4, 16).causal_pairs(), 10.0);
    }
}
