//! One layer's tensors before grouping ([`Tensor`], [`lin`]), and their grouping across layers into the
//! weights table ([`Grouper`]): each tensor's format (the quantisation, unless the checkpoint keeps it or a
//! module pattern leaves it alone), its slice per rank, and the group it joins. Layers alike are grouped
//! once: a layer whose kind was seen adds one to the same groups, so the work and memory do not grow with
//! the layers beyond a count each.

use std::collections::{BTreeSet, HashMap};

use super::quant::Quant;
use crate::Error;
use crate::weights::{Attention, LayerKind, RankSplit, Reads, TensorGroup, WeightFormat};

/// One tensor of one layer before grouping.
pub(super) struct Tensor {
    pub(super) name: &'static str,
    /// The module within the layer (`self_attn.q_proj`), which quantisation patterns match.
    pub(super) module: String,
    pub(super) k: u64,
    pub(super) n: u64,
    pub(super) bias: bool,
    pub(super) per_layer: u64,
    pub(super) quantizable: bool,
    /// The format the checkpoint stores it in whatever the quantisation (fp32 mixing weights, int64
    /// lookup tables).
    pub(super) fixed: Option<WeightFormat>,
    /// Bytes per bias element when not the activation dtype's (the fp32 router correction biases).
    pub(super) bias_bytes: Option<u64>,
    pub(super) reads: Reads,
    pub(super) split: RankSplit,
}

impl Tensor {
    /// Never quantised (norms, routers, sinks, projections a checkpoint keeps in its dtype).
    pub(super) fn kept(mut self) -> Tensor {
        self.quantizable = false;
        self
    }

    /// Stored in `format` whatever the quantisation (fp32 mixing weights and norms, int64 tables).
    pub(super) fn stored_as(mut self, format: WeightFormat) -> Tensor {
        self.quantizable = false;
        self.fixed = Some(format);
        self
    }

    /// `n` of them in each layer.
    pub(super) fn times(mut self, n: u64) -> Tensor {
        self.per_layer = n;
        self
    }
}

/// One linear of one layer, read every step and quantised with the others; callers change what differs.
pub(super) fn lin(
    name: &'static str,
    module: impl Into<String>,
    k: u64,
    n: u64,
    bias: bool,
    split: RankSplit,
) -> Tensor {
    Tensor {
        name,
        module: module.into(),
        k,
        n,
        bias,
        per_layer: 1,
        quantizable: true,
        fixed: None,
        bias_bytes: None,
        reads: Reads::EveryStep,
        split,
    }
}

/// Which layers' copy of one module a set of module patterns matches ([`super::module_matches`] over
/// `<root>.<layer>.<module>` for every layer at once): all of them, or those whose number a pattern spells.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct LayerMatch {
    all: bool,
    layers: BTreeSet<u64>,
}

/// One component of a layer's module path: a name, or the slot of the layer's number.
#[derive(Clone, Copy)]
enum Component<'a> {
    Name(&'a str),
    Layer,
}

/// `c` if it is a layer number as a path spells it (decimal, no sign, no leading zero).
fn layer_number(c: &str) -> Option<u64> {
    c.parse::<u64>().ok().filter(|n| n.to_string() == c)
}

impl LayerMatch {
    /// Where `patterns` match `<root>.<i>.<module>`, for all i.
    pub(super) fn of(patterns: &[String], root: &str, module: &str) -> LayerMatch {
        let path: Vec<Component<'_>> = root
            .split('.')
            .map(Component::Name)
            .chain(std::iter::once(Component::Layer))
            .chain(module.split('.').map(Component::Name))
            .collect();
        let mut found = LayerMatch::default();
        for pattern in patterns {
            let p: Vec<&str> = pattern.split('.').collect();
            if p.len() > path.len() {
                continue;
            }
            for start in 0..=path.len() - p.len() {
                let mut at_layer = None;
                let fits = p.iter().zip(&path[start..]).all(|(pc, mc)| match mc {
                    Component::Name(name) => *pc == "*" || pc == name,
                    Component::Layer => {
                        at_layer = Some(*pc);
                        true
                    }
                });
                if !fits {
                    continue;
                }
                match at_layer {
                    None | Some("*") => found.all = true,
                    Some(c) => found.layers.extend(layer_number(c)),
                }
            }
        }
        found
    }

    /// Whether layer `i`'s copy is matched.
    pub(super) fn matches(&self, i: u64) -> bool {
        self.all || self.layers.contains(&i)
    }
}

/// The layer numbers any pattern spells: layers whose tensors a pattern may single out.
pub(super) fn spelled_layers(patterns: &[String]) -> BTreeSet<u64> {
    patterns
        .iter()
        .flat_map(|p| p.split('.').filter_map(layer_number))
        .collect()
}

/// What makes one layer's tensors: its kind, whether it routes by a token table (DeepSeek-V4), and its
/// number when a quantisation pattern spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct LayerSignature {
    pub(super) kind: LayerKind,
    pub(super) hash_routed: bool,
    pub(super) spelled: Option<u64>,
}

/// The weights table as layers arrive: groups in the order their tensors first appear.
pub(super) struct Grouper<'a> {
    pub(super) groups: Vec<TensorGroup>,
    /// The groups each kind of layer adds to, with repeats (a layer of a seen signature adds to these).
    seen: HashMap<LayerSignature, Vec<usize>>,
    matches: HashMap<String, LayerMatch>,
    pub(super) quant: &'a Quant,
    /// DeepSeek-V4's routed experts' own format.
    pub(super) expert_format: Option<WeightFormat>,
    pub(super) act: WeightFormat,
    pub(super) act_bytes: u64,
    pub(super) attention: Attention,
    pub(super) tp: u64,
    pub(super) ep: u64,
    /// The layers' module path (`model.layers`, `layers`), for the quantisation patterns.
    pub(super) root: String,
    pub(super) origin: &'a str,
}

impl<'a> Grouper<'a> {
    #[allow(clippy::too_many_arguments)] // the table's settings, each named at the one call
    pub(super) fn new(
        quant: &'a Quant,
        expert_format: Option<WeightFormat>,
        act: WeightFormat,
        act_bytes: u64,
        attention: Attention,
        (tp, ep): (u64, u64),
        root: String,
        origin: &'a str,
    ) -> Grouper<'a> {
        Grouper {
            groups: Vec::new(),
            seen: HashMap::new(),
            matches: HashMap::new(),
            quant,
            expert_format,
            act,
            act_bytes,
            attention,
            tp,
            ep,
            root,
            origin,
        }
    }

    /// Adds layer `i`: to the groups of its signature's first layer if one was seen, else its tensors
    /// (`make`) each to the first group of its name, shape, count and format, or to a new group.
    pub(super) fn add_layer(
        &mut self,
        i: u64,
        signature: LayerSignature,
        make: impl FnOnce() -> Result<Vec<Tensor>, Error>,
    ) -> Result<(), Error> {
        if let Some(ids) = self.seen.get(&signature) {
            for &g in ids {
                self.groups[g].layers += 1;
            }
            return Ok(());
        }
        let mut ids = Vec::new();
        for t in make()? {
            ids.push(self.add(&t, i)?);
        }
        self.seen.insert(signature, ids);
        Ok(())
    }

    fn format_of(&mut self, t: &Tensor, i: u64) -> WeightFormat {
        if let Some(f) = t.fixed {
            return f;
        }
        if t.reads == Reads::RoutedExperts
            && let Some(e) = self.expert_format
        {
            return e;
        }
        let format = self.quant.format;
        match format {
            Some(q) if t.quantizable && !self.skipped(&t.module, i) => q,
            _ => self.act,
        }
    }

    /// Whether a `modules_to_not_convert`-style pattern leaves layer `i`'s `module` unquantised.
    fn skipped(&mut self, module: &str, i: u64) -> bool {
        if self.quant.skip.is_empty() {
            return false;
        }
        let (skip, root) = (&self.quant.skip, &self.root);
        self.matches
            .entry(module.to_string())
            .or_insert_with(|| LayerMatch::of(skip, root, module))
            .matches(i)
    }

    fn split_dim(&self, dim: u64, ranks: u64, what: &str) -> Result<u64, Error> {
        if !dim.is_multiple_of(ranks) {
            return Err(Error::Invalid {
                origin: self.origin.to_string(),
                field: what.to_string(),
                reason: format!("{dim} does not divide among {ranks} ranks"),
            });
        }
        Ok(dim / ranks)
    }

    /// Adds one tensor of layer `i`; returns its group.
    fn add(&mut self, t: &Tensor, i: u64) -> Result<usize, Error> {
        let format = self.format_of(t, i);
        let routed = t.reads == Reads::RoutedExperts;
        // Experts under expert parallelism are whole on one rank; otherwise split like a dense MLP.
        let ranks = if routed && self.ep > 1 { 1 } else { self.tp };
        // Fewer KV heads than ranks: each rank holds one whole KV head (vLLM replicates them).
        let kv_replicated = matches!(t.name, "self_attn.k_proj" | "self_attn.v_proj")
            && matches!(self.attention, Attention::Gqa { kv_heads, .. } if kv_heads < self.tp);
        let (rank_in, rank_out) = match t.split {
            RankSplit::Column if kv_replicated => match self.attention {
                Attention::Gqa { head_dim, .. } => (t.k, head_dim),
                Attention::Mla { .. } | Attention::Hybrid { .. } => (t.k, t.n),
            },
            RankSplit::Column => (t.k, self.split_dim(t.n, ranks, t.name)?),
            RankSplit::Row => (self.split_dim(t.k, ranks, t.name)?, t.n),
            RankSplit::Replicated => (t.k, t.n),
        };
        let rank_per_layer = if routed {
            t.per_layer / self.ep
        } else {
            t.per_layer
        };
        if let Some(g) = self.groups.iter().position(|g| {
            g.name == t.name
                && g.in_features == t.k
                && g.out_features == t.n
                && g.per_layer == t.per_layer
                && g.format == format
        }) {
            self.groups[g].layers += 1;
            return Ok(g);
        }
        self.groups.push(TensorGroup {
            name: t.name.to_string(),
            in_features: t.k,
            out_features: t.n,
            bias: t.bias,
            per_layer: t.per_layer,
            layers: 1,
            format,
            bias_bytes: t.bias_bytes.unwrap_or(self.act_bytes),
            reads: t.reads,
            split: t.split,
            rank_in,
            rank_out,
            rank_per_layer,
        });
        Ok(self.groups.len() - 1)
    }

    /// A tensor outside the layers (final norm, embedding, LM head): one of it.
    pub(super) fn whole(
        &mut self,
        name: &str,
        (k, n): (u64, u64),
        format: WeightFormat,
        reads: Reads,
        split: RankSplit,
        rank_out: u64,
    ) -> &mut TensorGroup {
        self.groups.push(TensorGroup {
            name: name.to_string(),
            in_features: k,
            out_features: n,
            bias: false,
            per_layer: 1,
            layers: 1,
            format,
            bias_bytes: self.act_bytes,
            reads,
            split,
            rank_in: k,
            rank_out,
            rank_per_layer: 1,
        });
        let last = self.groups.len() - 1;
        &mut self.groups[last]
    }
}

#[cfg(test)]
mod tests {
    use super::super::module_matches;
    use super::*;
    use proptest::prelude::*;

    fn component() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("*".to_string()),
            Just("model".to_string()),
            Just("layers".to_string()),
            Just("mlp".to_string()),
            Just("gate".to_string()),
            (0u64..12).prop_map(|n| n.to_string()),
            Just("03".to_string()),
            Just(String::new()),
        ]
    }

    fn dotted(max: usize) -> impl Strategy<Value = String> {
        prop::collection::vec(component(), 1..=max).prop_map(|c| c.join("."))
    }

    proptest! {
        /// The match for every layer at once is the pattern match of each layer's path.
        #[test]
        fn layer_match_is_the_module_match_of_each_layer(
            patterns in prop::collection::vec(dotted(5), 0..4),
            root in dotted(2),
            module in dotted(3),
        ) {
            let all = LayerMatch::of(&patterns, &root, &module);
            for i in 0..14u64 {
                let path = format!("{root}.{i}.{module}");
                let want = patterns.iter().any(|p| module_matches(p, &path));
                prop_assert_eq!(all.matches(i), want, "layer {} of {}", i, path);
                if want && !all.all {
                    prop_assert!(spelled_layers(&patterns).contains(&i));
                }
            }
        }
    }
}
