//! Triggers: domain events from webhook deliveries, comment commands, and the jobs they ask for.
//!
//! `HANDLED_EVENTS` (event.rs) are the events the server stores, `Event::from_json` (event.rs) turns a
//! signed delivery's body into a domain event, `parse_commands` (command.rs) reads `@agent …`
//! mentions, and `decide` (decide.rs) says what to do: ignore, pong, or act for a requester behind a
//! permission gate.

pub mod command;
pub mod decide;
pub mod event;
mod json;
pub mod subject;

#[cfg(test)]
mod tests;

pub use crate::config::command::PackageName;
pub use command::{Chore, Command, ParseError, parse_commands};
pub use decide::{
    Action, CiFailure, Decision, JobKind, JobRequest, JobSource, PermissionGate, ReplyTarget, Request, Requester,
    TriggerConfig, chore_key, decide,
};
pub use event::{
    Actor, ActorKind, AppRef, AuthorAssociation, CI_EVENTS, CheckRun, CheckSuite, CommentEvent, Conclusion, Context,
    Event, EventError, HANDLED_EVENTS, IssueRef, PullAction, PullEvent, RepoRef, ReviewContext, WorkflowRun,
    read_payload,
};
pub use subject::Subject;
