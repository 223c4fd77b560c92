//! kl1-shapes: byte estimates from a model spec. Being written (issue "kl1-shapes").
#![deny(missing_docs)]
