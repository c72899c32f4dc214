//! The `task` tool: a sub-agent with read-only tools and a smaller budget, for side quests (find
//! where something is defined, survey how a feature works) whose exploration would otherwise fill
//! the main context. Only its final report enters the parent's conversation.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::llm::Model;
use crate::prompts::Template;
use crate::tools::{BoxFuture, Registry, Tool, ToolContext, ToolError, parse_args};

use super::events::NoEvents;
use super::{Agent, AgentConfig, Meter, StopReason, Task, loop_text};

pub struct TaskTool {
    model: Arc<dyn Model>,
    tools: Registry,
    config: AgentConfig,
    meter: Arc<Meter>,
}

impl TaskTool {
    /// A sub-agent over the read-only part of `tools` (never itself: no nesting), with `max_steps` steps.
    pub fn new(
        model: Arc<dyn Model>,
        tools: &Registry,
        parent: &AgentConfig,
        meter: Arc<Meter>,
        max_steps: u32,
    ) -> Self {
        let mut read_only = Registry::new();
        for name in tools.read_only().names() {
            if name != "task"
                && let Some(tool) = tools.get(name)
            {
                read_only.add(tool.clone());
            }
        }
        let config = AgentConfig {
            max_steps,
            max_cost_usd: None,
            ..parent.clone()
        };
        TaskTool {
            model,
            tools: read_only,
            config,
            meter,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    description: String,
    prompt: String,
}

impl Tool for TaskTool {
    fn name(&self) -> &'static str {
        "task"
    }

    fn description(&self) -> &'static str {
        "Hand a self-contained research question to a sub-agent that searches and reads the repository with \
         read-only tools and returns only its final report. Use it for side quests whose exploration would fill \
         your context (\"where is X configured and who calls it?\", \"how do the existing tests set up a \
         database?\"). The sub-agent cannot change files and sees nothing of this conversation: put everything \
         it needs in `prompt`. Returns its report."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "description": {"type": "string", "description": "A short title for the sub-task (3-6 words)."},
                "prompt": {"type": "string", "description": "The full question, with all the context the sub-agent needs."}
            },
            "required": ["description", "prompt"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, ctx: &'a ToolContext, args: Map<String, Value>) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move {
            let Args { description, prompt } = parse_args(self.name(), args)?;
            if prompt.trim().is_empty() {
                return Err(ToolError::respond(
                    "`prompt` is empty: say what the sub-agent should find out",
                ));
            }
            let agent = Agent {
                model: self.model.clone(),
                tools: self.tools.clone(),
                system: loop_text(&self.config.prompts, Template::Subagent, &[]),
                config: self.config.clone(),
                events: Arc::new(NoEvents),
                meter: self.meter.clone(),
            };
            let cancel = ctx.cancel.child_token();
            let outcome = agent
                .run(
                    ctx,
                    Task {
                        prompt,
                        requires_change: false,
                    },
                    &cancel,
                )
                .await;
            let report = outcome.summary.trim();
            match outcome.stop {
                StopReason::Finished if !report.is_empty() => Ok(report.to_owned()),
                StopReason::Finished => Err(ToolError::respond(format!(
                    "the sub-agent `{description}` gave no report"
                ))),
                StopReason::BudgetExhausted { .. } if !report.is_empty() => Ok(format!(
                    "(The sub-agent `{description}` ran out of budget; its report may be incomplete.)\n\n{report}"
                )),
                stop => Err(ToolError::respond(format!(
                    "the sub-agent `{description}` stopped: {stop}"
                ))),
            }
        })
    }
}
