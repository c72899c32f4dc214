//! The suite's test modules, one per area.

mod llm_providers;
mod scripted_model;
