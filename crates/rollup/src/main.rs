//! The rollup Lambda (see the crate docs); wiring only.

fn main() {}
