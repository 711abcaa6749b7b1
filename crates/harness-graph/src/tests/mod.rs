//! The graph's shape checked on its own, without states or nodes to run: the checks
//! `build()` makes and the exact `diagram()` text.

#![allow(clippy::unwrap_used)]

mod diagram;
mod topology;
