//! The plan: the agent's todo list, kept by the `update_plan` tool, shown live by every front end
//! and included in the final summary.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::{BoxFuture, Tool, ToolContext, ToolError, parse_args};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    Pending,
    InProgress,
    Done,
    Failed,
}

impl StepStatus {
    pub fn marker(self) -> &'static str {
        match self {
            StepStatus::Pending => "[ ]",
            StepStatus::InProgress => "[~]",
            StepStatus::Done => "[x]",
            StepStatus::Failed => "[!]",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanStep {
    pub id: String,
    pub title: String,
    pub status: StepStatus,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    pub steps: Vec<PlanStep>,
    /// Bumped by every update, so the loop can tell that the plan changed.
    #[serde(skip)]
    pub version: u64,
}

impl Plan {
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// One line per step: `[x] 1. Reproduce the failure`.
    pub fn render(&self) -> String {
        self.steps
            .iter()
            .map(|step| format!("{} {}. {}", step.status.marker(), step.id, step.title))
            .collect::<Vec<_>>()
            .join("\n")
    }

    pub fn count(&self, status: StepStatus) -> usize {
        self.steps.iter().filter(|s| s.status == status).count()
    }
}

/// `update_plan`: replaces the whole plan.
pub struct UpdatePlan;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    steps: Vec<PlanStep>,
}

impl Tool for UpdatePlan {
    fn name(&self) -> &'static str {
        "update_plan"
    }

    fn description(&self) -> &'static str {
        "Record or update your plan: the whole list of steps for the task, each with a short id, a title and a \
         status (pending, in_progress, done, failed). Send the complete list every time; it replaces the previous \
         one. Keep at most one step in_progress, and mark steps done as soon as they are done. Make a plan at the \
         start of any task with more than one step; maintainers watch it live and it appears in your final report."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "steps": {
                    "type": "array",
                    "description": "Every step of the plan, in order.",
                    "items": {
                        "type": "object",
                        "properties": {
                            "id": {"type": "string", "description": "Short unique id, e.g. \"1\"."},
                            "title": {"type": "string", "description": "What the step does, in a few words."},
                            "status": {"type": "string", "enum": ["pending", "in_progress", "done", "failed"]}
                        },
                        "required": ["id", "title", "status"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["steps"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        // It changes run state, not the workspace; but its order relative to other calls matters.
        false
    }

    fn call<'a>(&'a self, ctx: &'a ToolContext, args: Map<String, Value>) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move {
            let Args { steps } = parse_args(self.name(), args)?;
            validate(&steps)?;
            let mut plan = ctx.plan.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            plan.steps = steps;
            plan.version += 1;
            let done = plan.count(StepStatus::Done);
            Ok(format!(
                "Plan updated ({done} of {} done):\n{}",
                plan.steps.len(),
                plan.render()
            ))
        })
    }
}

fn validate(steps: &[PlanStep]) -> Result<(), ToolError> {
    if steps.is_empty() {
        return Err(ToolError::respond("the plan needs at least one step"));
    }
    let mut seen = std::collections::BTreeSet::new();
    for step in steps {
        if step.id.trim().is_empty() || step.title.trim().is_empty() {
            return Err(ToolError::respond("every step needs a non-empty id and title"));
        }
        if !seen.insert(step.id.as_str()) {
            return Err(ToolError::respond(format!(
                "two steps have the id `{}`; ids must be unique",
                step.id
            )));
        }
    }
    let active: Vec<_> = steps
        .iter()
        .filter(|s| s.status == StepStatus::InProgress)
        .map(|s| s.id.as_str())
        .collect();
    if active.len() > 1 {
        return Err(ToolError::respond(format!(
            "steps {} are all in_progress; keep one step in_progress at a time",
            active.join(", ")
        )));
    }
    Ok(())
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn step(id: &str, status: StepStatus) -> PlanStep {
        PlanStep {
            id: id.into(),
            title: format!("step {id}"),
            status,
        }
    }

    #[test]
    fn plans_render_and_validate() {
        let plan = Plan {
            steps: vec![step("1", StepStatus::Done), step("2", StepStatus::InProgress)],
            version: 1,
        };
        assert_eq!(plan.render(), "[x] 1. step 1\n[~] 2. step 2");
        assert!(validate(&plan.steps).is_ok());
        let err = validate(&[step("1", StepStatus::Done), step("1", StepStatus::Pending)]).unwrap_err();
        assert_eq!(err, ToolError::respond("two steps have the id `1`; ids must be unique"));
        let err = validate(&[step("a", StepStatus::InProgress), step("b", StepStatus::InProgress)]).unwrap_err();
        assert!(err.to_string().contains("a, b are all in_progress"));
        assert!(validate(&[]).is_err());
    }
}
