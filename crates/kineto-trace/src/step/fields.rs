//! A marker's name read into a step's fields: number, phase, rows, requests and per-phase token counts,
//! with the numbers a group has but cannot give (out of range, not an integer) kept as reasons.

use super::*;
/// Which phase a `phase` group's text names: prefill (`prefill`, `extend`, `context`), decode
/// (`decode`, `generation`), or neither (`mixed`, `idle`, …).
pub fn phase_kind(text: &str) -> Option<bool> {
    let t = text.to_ascii_lowercase();
    if ["prefill", "extend", "context"]
        .iter()
        .any(|w| t.contains(w))
    {
        Some(true)
    } else if ["decode", "generation", "verify"]
        .iter()
        .any(|w| t.contains(w))
    {
        Some(false)
    } else {
        None
    }
}

/// The fields a marker's name gives.
#[derive(Default)]
pub(super) struct Fields {
    pub(super) number: Option<u64>,
    pub(super) phase: Option<String>,
    pub(super) rows: Option<u64>,
    pub(super) requests: Option<u64>,
    pub(super) tokens: Option<StepTokens>,
    pub(super) unreadable: Vec<(String, String)>,
}

/// The fields a regex marker's groups give.
pub(super) fn fields(
    regex: &Regex,
    name: &str,
    index: usize,
    warnings: &mut Vec<String>,
) -> Fields {
    let caps = regex.captures(name);
    let text = |g: &str| caps.as_ref().and_then(|c| c.name(g)).map(|m| m.as_str());
    let mut unreadable: Vec<(String, String)> = Vec::new();
    let mut int = |g: &str| -> Option<u64> {
        let t = text(g)?;
        let v = t.parse().ok();
        if v.is_none() {
            // All digits, yet no u64: an integer out of range, not a missing one.
            let why = if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
                "is out of range (more than 18446744073709551615)"
            } else {
                "is not an integer"
            };
            if warnings.len() < 20 {
                warnings.push(format!("step {index} `{name}`: group `{g}` = `{t}` {why}"));
            }
            unreadable.push((g.to_owned(), format!("`{t}` {why}")));
        }
        v
    };
    let (number, rows, requests) = (int("step"), int("rows"), int("requests"));
    let mut phase_tokens = |ph: &str| -> Option<PhaseTokens> {
        let t = PhaseTokens {
            requests: int(&format!("{ph}_requests")),
            query_tokens: int(&format!("{ph}_query_tokens")),
            context_tokens: int(&format!("{ph}_context_tokens")),
            query_sq_sum: int(&format!("{ph}_query_sq_sum")),
            query_context_sum: int(&format!("{ph}_query_context_sum")),
        };
        (t != PhaseTokens::default()).then_some(t)
    };
    let (mut prefill, mut decode) = (phase_tokens("prefill"), phase_tokens("decode"));
    let phase_text = text("phase");
    if let Some(d) = text(DETAIL) {
        detail_tokens(d, phase_text, requests, &mut prefill, &mut decode);
    }
    let mut phase = phase_text.map(str::to_string);
    let tokens = if prefill.is_some() || decode.is_some() {
        // Explicit per-phase groups; the phase is what has requests.
        if phase.is_none() {
            let has = |p: Option<PhaseTokens>| p.and_then(|p| p.requests).unwrap_or(0) > 0;
            phase = match (has(prefill), has(decode)) {
                (true, true) => Some("mixed".to_string()),
                (true, false) => Some("prefill".to_string()),
                (false, true) => Some("decode".to_string()),
                (false, false) => None,
            };
        }
        Some(StepTokens {
            prefill,
            decode,
            unphased: None,
        })
    } else {
        // `requests` and `tokens` belong to the phase the `phase` group names.
        let mut t = PhaseTokens {
            requests,
            query_tokens: int("tokens"),
            ..PhaseTokens::default()
        };
        // SGLang's DECODE forward runs one token per request (speculative verification is its own
        // mode, TARGET_VERIFY, and a draft model's decode is a `draft step[…]`).
        if phase_text == Some("DECODE") && text(DETAIL).is_some() && t.query_tokens.is_none() {
            t.query_tokens = requests;
        }
        match phase.as_deref().and_then(phase_kind) {
            Some(_) if t == PhaseTokens::default() => None,
            Some(true) => Some(StepTokens {
                prefill: Some(t),
                ..StepTokens::default()
            }),
            Some(false) => Some(StepTokens {
                decode: Some(t),
                ..StepTokens::default()
            }),
            None => None,
        }
    };
    let requests = requests.or_else(|| {
        let r = |p: Option<PhaseTokens>| p.and_then(|p| p.requests);
        match (r(prefill), r(decode)) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
        }
    });
    Fields {
        number,
        phase,
        rows,
        requests,
        tokens,
        unreadable,
    }
}

/// SGLang's detailed counts after `bs=`: `c=`/`g=` requests of a MIXED batch and `c_`/`g_` (context,
/// generation) `sq`, `sk`, `sqsq`, `sqsk`. A phase the mode names gets the batch's requests; the
/// extend tokens of `toks=` stay with the base label.
pub(super) fn detail_tokens(
    detail: &str,
    mode: Option<&str>,
    bs: Option<u64>,
    prefill: &mut Option<PhaseTokens>,
    decode: &mut Option<PhaseTokens>,
) {
    let mut c = PhaseTokens::default();
    let mut g = PhaseTokens::default();
    for kv in detail.split_whitespace() {
        let Some((k, v)) = kv.split_once('=') else {
            continue;
        };
        let Ok(v) = v.parse::<u64>() else { continue };
        let (p, key) = match k.split_once('_') {
            Some(("c", key)) => (&mut c, key),
            Some(("g", key)) => (&mut g, key),
            _ => match k {
                "c" => (&mut c, "requests"),
                "g" => (&mut g, "requests"),
                _ => continue,
            },
        };
        match key {
            "requests" => p.requests = Some(v),
            "sq" => p.query_tokens = Some(v),
            "sk" => p.context_tokens = Some(v),
            "sqsq" => p.query_sq_sum = Some(v),
            "sqsk" => p.query_context_sum = Some(v),
            _ => {}
        }
    }
    let kind = mode.and_then(phase_kind);
    for (p, is_prefill, slot) in [(c, true, prefill), (g, false, decode)] {
        if p == PhaseTokens::default() {
            continue;
        }
        let mut p = p;
        if p.requests.is_none() && kind == Some(is_prefill) {
            p.requests = bs;
        }
        *slot = Some(p);
    }
}
