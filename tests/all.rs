//! The end-to-end suite: one test binary, tests under suite/.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "a failing test should panic")]

mod suite;
