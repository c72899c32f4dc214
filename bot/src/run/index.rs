//! `pitcrew index`: the code index of a checkout, asked what the agent's `find_symbol`,
//! `find_references` and `outline` tools ask, answered by the same code in the same words (or as
//! JSON). In a git repository the parse cache is the one `pitcrew run` keeps under
//! `.git/pitcrew/index-cache/`, so a second query re-reads the tree but parses nothing.

use std::path::Path;

use serde_json::json;

use crate::index::SymbolKind;
use crate::index::cache::{BlobCache, DEFAULT_LIMIT_BYTES};
use crate::index::live::{Completeness, LiveIndex};
use crate::index::lookup;
use crate::tools::Workspace;
use crate::tools::symbols::{render_outline, render_references, render_symbols};
use crate::workspace::LocalRepo;

/// What to ask the index.
#[derive(Debug, Clone)]
pub enum IndexQuery {
    /// Definitions matching a name, a qualified name or a prefix.
    Symbols {
        query: String,
        kind: Option<SymbolKind>,
        path: Option<String>,
        limit: usize,
    },
    /// Uses of a symbol.
    References {
        symbol: String,
        path: Option<String>,
        limit: usize,
    },
    /// A file's definitions as a tree.
    Outline { file: String },
}

/// What `pitcrew index` prints, and whether it found anything.
#[derive(Debug)]
pub struct IndexAnswer {
    pub text: String,
    pub found: bool,
}

/// Why the index of a checkout could not answer.
#[derive(Debug, thiserror::Error)]
pub enum IndexCommandError {
    #[error("could not open the checkout {}: {source}", path.display())]
    Checkout {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("{0}")]
    Query(String),
}

/// Builds the index of the checkout at `repo` and answers `query`, as text or as JSON.
pub fn answer(repo: &Path, query: &IndexQuery, json: bool) -> Result<IndexAnswer, IndexCommandError> {
    let workspace = Workspace::new(repo).map_err(|source| IndexCommandError::Checkout {
        path: repo.to_owned(),
        source,
    })?;
    let root = workspace.root().to_owned();
    let cache = LocalRepo::open(&root).ok().and_then(|repo| {
        BlobCache::open(&repo.git_dir().join("pitcrew").join("index-cache"), DEFAULT_LIMIT_BYTES).ok()
    });
    let index = LiveIndex::build_now(&root, cache, None);
    let complete = |c: &Completeness| matches!(c, Completeness::Complete);
    match query {
        IndexQuery::Symbols {
            query,
            kind,
            path,
            limit,
        } => {
            let (matches, completeness) = index.query(std::time::Duration::ZERO, |index| {
                lookup::find_symbol(index, query, *kind, path.as_deref())
            });
            let text = if json {
                let shown: Vec<_> = matches.iter().take(*limit).collect();
                pretty(&json!({
                    "query": query,
                    "complete": complete(&completeness),
                    "total": matches.len(),
                    "matches": shown,
                }))?
            } else {
                render_symbols(query, *kind, &matches, &completeness, 0, *limit)
            };
            Ok(IndexAnswer {
                text,
                found: !matches.is_empty(),
            })
        }
        IndexQuery::References { symbol, path, limit } => {
            let (found, completeness) = index.query(std::time::Duration::ZERO, |index| {
                lookup::find_references(index, symbol, path.as_deref())
            });
            let text = if json {
                pretty(&json!({
                    "symbol": symbol,
                    "complete": complete(&completeness),
                    "references": found,
                }))?
            } else {
                render_references(symbol, &found, &completeness, &workspace, 0, *limit)
            };
            Ok(IndexAnswer {
                text,
                found: !found.files.is_empty(),
            })
        }
        IndexQuery::Outline { file } => {
            let resolved = workspace
                .resolve_read(file)
                .map_err(|error| IndexCommandError::Query(error.to_string()))?;
            let shown = workspace.display(&resolved);
            let (items, completeness) = index.query(std::time::Duration::ZERO, |index| lookup::outline(index, &shown));
            let text = if json {
                pretty(&json!({
                    "path": shown,
                    "complete": complete(&completeness),
                    "indexed": items.is_some(),
                    "items": items.as_deref().unwrap_or_default(),
                }))?
            } else {
                render_outline(&shown, items.as_deref(), &completeness).map_err(IndexCommandError::Query)?
            };
            Ok(IndexAnswer {
                text,
                found: items.is_some_and(|items| !items.is_empty()),
            })
        }
    }
}

fn pretty(value: &serde_json::Value) -> Result<String, IndexCommandError> {
    serde_json::to_string_pretty(value).map_err(|error| IndexCommandError::Query(error.to_string()))
}
