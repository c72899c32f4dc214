//! The conversation's size: token estimates, the output budgets that keep tool results from
//! flooding the context (large results are saved to the run directory with a preview), and the
//! choice of what compaction keeps verbatim.

use std::path::{Path, PathBuf};

use crate::llm::{AssistantPart, Message, Request, Usage};

/// Characters per token for estimates; conservative for code, which tokenises densely.
const CHARS_PER_TOKEN: u64 = 3;

/// A rough token count of a request: everything it sends, in characters, over a conservative ratio.
pub fn estimate_tokens(request: &Request) -> u64 {
    let tools: usize = request
        .tools
        .iter()
        .map(|t| t.name.len() + t.description.len() + t.parameters.to_string().len())
        .sum();
    let messages: usize = request.messages.iter().map(message_chars).sum();
    ((request.system.len() + tools + messages) as u64).div_ceil(CHARS_PER_TOKEN)
}

pub fn message_chars(message: &Message) -> usize {
    match message {
        Message::User { text } => text.len(),
        Message::Tool(result) => result.content.len() + result.call_id.len(),
        Message::Assistant { parts } => parts
            .iter()
            .map(|part| match part {
                AssistantPart::Text { text } => text.len(),
                AssistantPart::Thinking { text, signature } => text.len() + signature.as_ref().map_or(0, String::len),
                AssistantPart::RedactedThinking { data } => data.len(),
                AssistantPart::ToolCall(call) => call.name.len() + call.arguments.len() + call.id.len(),
            })
            .sum(),
    }
}

/// Tracks how big the conversation is, preferring the provider's own count of the last request
/// and estimating only what was appended since.
#[derive(Debug, Default, Clone)]
pub struct SizeTracker {
    /// (messages in the last request, its input + output tokens as the provider counted them)
    measured: Option<(usize, u64)>,
}

impl SizeTracker {
    pub fn measured(&mut self, messages: usize, usage: &Usage) {
        self.measured = Some((messages, usage.total_input_tokens() + usage.output_tokens));
    }

    pub fn reset(&mut self) {
        self.measured = None;
    }

    pub fn tokens(&self, request: &Request) -> u64 {
        match self.measured {
            Some((count, tokens)) if count <= request.messages.len() && tokens > 0 => {
                let appended: usize = request.messages[count..].iter().map(message_chars).sum();
                tokens + (appended as u64).div_ceil(CHARS_PER_TOKEN)
            }
            _ => estimate_tokens(request),
        }
    }
}

/// Keeps tool results inside the context budgets.
#[derive(Debug, Clone)]
pub struct OutputBudget {
    /// The largest result one call may put in the context, in characters.
    pub per_tool: usize,
    /// The most all results of one turn may put in the context together.
    pub per_turn: usize,
    /// Characters of a persisted result shown to the model.
    pub preview: usize,
}

impl Default for OutputBudget {
    fn default() -> Self {
        OutputBudget {
            per_tool: 30_000,
            per_turn: 200_000,
            preview: 2_000,
        }
    }
}

/// One result on its way into the context.
pub struct PendingResult {
    pub call_id: String,
    pub content: String,
    /// Tools that paginate their own output (`read_file`) are never persisted.
    pub paginated: bool,
    pub persisted_to: Option<PathBuf>,
}

impl OutputBudget {
    /// Persists results over the per-tool budget, then the largest others until the turn fits.
    pub fn apply(&self, results: &mut [PendingResult], dir: &Path) {
        for result in results.iter_mut() {
            if !result.paginated && result.content.len() > self.per_tool {
                self.persist(result, dir);
            }
        }
        let mut total: usize = results.iter().map(|r| r.content.len()).sum();
        while total > self.per_turn {
            let Some(largest) = results
                .iter_mut()
                // Persisting swaps a result for a preview and a note: only worth it for results well above that.
                .filter(|r| !r.paginated && r.persisted_to.is_none() && r.content.len() > self.preview + 1_000)
                .max_by_key(|r| r.content.len())
            else {
                break;
            };
            let before = largest.content.len();
            self.persist(largest, dir);
            total = total - before + largest.content.len();
        }
    }

    fn persist(&self, result: &mut PendingResult, dir: &Path) {
        let path = dir.join(format!("{}.txt", sanitize(&result.call_id)));
        let full_len = result.content.len();
        let lines = result.content.lines().count();
        let saved = std::fs::create_dir_all(dir).and_then(|()| std::fs::write(&path, &result.content));
        let preview = cut(&result.content, self.preview);
        result.content = match saved {
            Ok(()) => {
                let shown = path.display();
                let message = format!(
                    "[The output was too large for the context ({full_len} characters, {lines} lines). It was saved \
                     to {shown}; read it with read_file (offset/limit) or search it with grep. The first \
                     {} characters:]\n{preview}\n[… {} more characters in {shown}]",
                    preview.len(),
                    full_len - preview.len()
                );
                result.persisted_to = Some(path);
                message
            }
            Err(err) => {
                tracing::warn!(%err, path = %path.display(), "could not persist a large tool result");
                format!(
                    "[The output was too large for the context ({full_len} characters) and could not be saved \
                     ({err}). Its first {} characters:]\n{preview}",
                    preview.len()
                )
            }
        };
    }
}

/// `text` cut to at most `max` bytes at a character boundary.
pub fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Tool call ids come from the model: keep them to safe file-name characters.
fn sanitize(id: &str) -> String {
    let clean: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.is_empty() {
        "result".into()
    } else {
        cut(&clean, 100).to_owned()
    }
}

/// Where the conversation splits for compaction: `head` (the task and its context, before the first
/// assistant turn), the middle to summarise, and the recent turns kept verbatim. The kept part starts
/// at an assistant message so that every tool result keeps its call.
pub fn split_for_compaction(messages: &[Message], keep_turns: usize) -> (usize, usize) {
    let head = messages
        .iter()
        .position(|m| matches!(m, Message::Assistant { .. }))
        .unwrap_or(messages.len());
    let assistant_positions: Vec<usize> = messages
        .iter()
        .enumerate()
        .skip(head)
        .filter(|(_, m)| matches!(m, Message::Assistant { .. }))
        .map(|(i, _)| i)
        .collect();
    let keep_from = if keep_turns == 0 || assistant_positions.len() <= keep_turns {
        // Too few turns to keep some and still summarise others: summarise all but the newest.
        assistant_positions.last().copied().unwrap_or(messages.len())
    } else {
        assistant_positions[assistant_positions.len() - keep_turns]
    };
    (head, keep_from.max(head))
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use crate::llm::ToolCall;

    fn assistant(call: &str) -> Message {
        Message::Assistant {
            parts: vec![AssistantPart::ToolCall(ToolCall {
                id: call.into(),
                name: "grep".into(),
                arguments: "{}".into(),
            })],
        }
    }

    #[test]
    fn compaction_keeps_the_head_and_whole_recent_turns() {
        let messages = vec![
            Message::user("task"),
            assistant("a"),
            Message::tool_result("a", "1", false),
            assistant("b"),
            Message::tool_result("b", "2", false),
            Message::user("note"),
            assistant("c"),
            Message::tool_result("c", "3", false),
        ];
        assert_eq!(split_for_compaction(&messages, 2), (1, 3));
        assert_eq!(split_for_compaction(&messages, 1), (1, 6));
        assert_eq!(split_for_compaction(&messages, 5), (1, 6));
        assert_eq!(split_for_compaction(&messages[..1], 2), (1, 1));
    }

    #[test]
    fn large_results_are_persisted_with_a_preview() {
        let dir = tempfile::tempdir().unwrap();
        let budget = OutputBudget {
            per_tool: 3_000,
            per_turn: 6_000,
            preview: 100,
        };
        let result = |id: &str, size: usize, paginated: bool| PendingResult {
            call_id: id.into(),
            content: "x".repeat(size),
            paginated,
            persisted_to: None,
        };
        let mut results = vec![
            result("big", 4_000, false),
            result("paged", 4_000, true),
            result("c/../d", 2_500, false),
            result("small", 900, false),
        ];
        budget.apply(&mut results, dir.path());
        // Over the per-tool budget: saved in full, previewed.
        let saved = results[0].persisted_to.clone().unwrap();
        assert_eq!(std::fs::read_to_string(&saved).unwrap().len(), 4_000);
        assert!(
            results[0].content.contains("4000 characters") && results[0].content.contains(&saved.display().to_string())
        );
        assert!(results[0].content.len() < 1_000);
        // Paginated output stays, but the turn is still over 6,000: the largest other result goes,
        // and then it fits, so the small one stays.
        assert!(results[1].persisted_to.is_none());
        assert!(results[2].persisted_to.as_ref().unwrap().ends_with("c____d.txt"));
        assert!(results[3].persisted_to.is_none());
        assert!(results.iter().map(|r| r.content.len()).sum::<usize>() <= 6_000);
    }

    #[test]
    fn measured_sizes_win_over_estimates() {
        let mut request = Request {
            messages: vec![Message::user("x".repeat(300))],
            ..Request::default()
        };
        let mut tracker = SizeTracker::default();
        assert_eq!(tracker.tokens(&request), 100);
        tracker.measured(
            1,
            &Usage {
                input_tokens: 1000,
                output_tokens: 50,
                ..Usage::default()
            },
        );
        request.messages.push(Message::user("y".repeat(30)));
        assert_eq!(tracker.tokens(&request), 1060);
    }

    #[test]
    fn cut_respects_char_boundaries() {
        assert_eq!(cut("héllo", 2), "h");
        assert_eq!(cut("abc", 10), "abc");
    }
}
