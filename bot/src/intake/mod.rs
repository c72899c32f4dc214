//! Intake: what turns the outside world into jobs, apart from HTTP — the dispatcher (stored webhook
//! deliveries → decisions → jobs, used by `pitcrew serve` and the Action alike) and the scheduler
//! (repositories' chore schedules → jobs).

mod act;
pub mod dispatch;
mod inbox;
pub mod scheduler;

pub use dispatch::{DispatchSettings, Dispatcher};
pub use inbox::{Inbox, Received};
pub use scheduler::Scheduler;
