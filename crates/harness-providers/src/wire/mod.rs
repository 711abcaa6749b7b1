//! Small pieces of the wire formats the vendors share: reading answers (`read.rs`, tuned),
//! writing requests (`write.rs`) and tool calls (`calls.rs`).

mod calls;
mod read;
mod write;

pub(crate) use calls::*;
pub(crate) use read::*;
pub(crate) use write::*;
