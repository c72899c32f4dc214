//! Test support for pitcrew's end-to-end suite: the fake servers the bot runs against.

pub mod scripted_model;
