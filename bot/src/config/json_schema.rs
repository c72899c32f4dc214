//! JSON Schemas of `pitcrew.toml` and of a repository's `.github/pitcrew.toml`, generated from the
//! tables the loaders read (`schema::KEYS`, `repo.rs`'s sections), for editors that check TOML
//! against a schema (Taplo, Even Better TOML: a `#:schema` line). The checked-in copies under
//! `schema/` are compared with these by a test, so they cannot drift from the loaders.

use serde_json::{Map, Value, json};

use super::repo;
use super::schema::{KEYS, Kind, PRICE_KEYS, PRICES, SECTIONS};

/// Where the checked-in schemas live, relative to the repository's root.
pub const OPERATOR_SCHEMA_FILE: &str = "schema/pitcrew.schema.json";
pub const REPO_SCHEMA_FILE: &str = "schema/pitcrew-repo.schema.json";

/// The schema of the operator's `pitcrew.toml`: every section and key the loader knows, with the
/// types each accepts; unknown sections and keys are refused, as the loader refuses them.
pub fn operator_schema() -> Value {
    let mut sections = Map::new();
    for section in SECTIONS {
        let mut keys = Map::new();
        for key in KEYS.iter().filter(|key| key.section == *section) {
            let mut spec = kind_schema(key.kind);
            if let Value::Object(spec) = &mut spec {
                if !key.choices.is_empty() {
                    spec.insert("enum".to_owned(), json!(key.choices));
                }
                spec.insert(
                    "description".to_owned(),
                    json!(format!(
                        "{} ({}); environment variable {}",
                        key.dotted(),
                        key.kind.expected(),
                        key.env_var()
                    )),
                );
            }
            keys.insert(key.name.to_owned(), spec);
        }
        sections.insert((*section).to_owned(), closed_object(keys));
    }
    let price: Map<String, Value> = PRICE_KEYS
        .iter()
        .map(|name| ((*name).to_owned(), json!({ "type": "number", "minimum": 0 })))
        .collect();
    sections.insert(
        PRICES.to_owned(),
        json!({
            "type": "object",
            "description": "USD per million tokens, by model name",
            "additionalProperties": closed_object(price),
        }),
    );
    document(
        "pitcrew.toml",
        "pitcrew's configuration (the operator's file)",
        sections,
    )
}

/// The schema of a repository's `.github/pitcrew.toml`: its sections and keys (unknown ones are
/// refused, as the loader refuses them); the values' rules are the loader's.
pub fn repo_schema() -> Value {
    let mut sections = Map::new();
    for (section, keys) in repo::SECTIONS {
        let mut properties: Map<String, Value> = keys.iter().map(|key| ((*key).to_owned(), json!({}))).collect();
        if *section == "chores.deps" {
            let rule: Map<String, Value> = repo::RULE_KEYS
                .iter()
                .map(|key| ((*key).to_owned(), json!({})))
                .collect();
            properties.insert(
                "rules".to_owned(),
                json!({ "type": "array", "items": closed_object(rule) }),
            );
        }
        let mut path = section.split('.').rev();
        let mut value = closed_object(properties);
        let Some(mut name) = path.next() else { continue };
        for parent in path {
            let mut wrapped = Map::new();
            wrapped.insert(name.to_owned(), value);
            value = closed_object(wrapped);
            name = parent;
        }
        sections.insert(name.to_owned(), value);
    }
    document(
        ".github/pitcrew.toml",
        "pitcrew's settings for one repository",
        sections,
    )
}

/// The schema as its checked-in file holds it: pretty JSON and a final newline.
pub fn file_text(schema: &Value) -> String {
    let mut text = serde_json::to_string_pretty(schema).unwrap_or_default();
    text.push('\n');
    text
}

fn document(title: &str, description: &str, sections: Map<String, Value>) -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": title,
        "description": description,
        "type": "object",
        "additionalProperties": false,
        "properties": sections,
    })
}

fn closed_object(properties: Map<String, Value>) -> Value {
    json!({ "type": "object", "additionalProperties": false, "properties": properties })
}

fn kind_schema(kind: Kind) -> Value {
    match kind {
        Kind::Str | Kind::Secret | Kind::Choice | Kind::Path | Kind::SocketAddr => json!({ "type": "string" }),
        Kind::Url => json!({ "type": "string", "format": "uri" }),
        Kind::U32 | Kind::U64 => json!({ "type": "integer", "minimum": 0 }),
        Kind::F64 => json!({ "type": "number" }),
        Kind::Bool => json!({ "type": "boolean" }),
        Kind::Duration | Kind::ByteSize => json!({ "type": ["string", "integer"] }),
    }
}

#[cfg(test)]
mod tests {
    #![expect(clippy::unwrap_used, reason = "a failing test should panic")]

    use super::*;

    /// The checked-in schemas are what the loaders know today (regenerate them with
    /// `pitcrew config schema > schema/pitcrew.schema.json`, and `--repo` for the other).
    #[test]
    fn the_checked_in_schemas_are_the_generated_ones() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
        for (file, schema) in [
            (OPERATOR_SCHEMA_FILE, operator_schema()),
            (REPO_SCHEMA_FILE, repo_schema()),
        ] {
            let checked_in = std::fs::read_to_string(format!("{root}/{file}")).unwrap();
            assert!(
                checked_in == file_text(&schema),
                "{file} is out of date: regenerate it with `pitcrew config schema{}`",
                if file == REPO_SCHEMA_FILE { " --repo" } else { "" }
            );
        }
    }

    /// The words the schema offers are those the loader accepts (its message lists them).
    #[test]
    fn the_choices_are_the_loaders() {
        let env = std::collections::BTreeMap::from([
            ("PITCREW_MODEL_NAME".to_owned(), "m".to_owned()),
            ("OPENAI_API_KEY".to_owned(), "k".to_owned()),
        ]);
        for key in KEYS.iter().filter(|key| key.kind == Kind::Choice) {
            assert!(!key.choices.is_empty(), "{}", key.dotted());
            let flag = [format!("{}=not-a-choice", key.dotted())];
            let errors = crate::config::Config::load(crate::config::LoadOptions {
                config_path: None,
                env: &env,
                overrides: &flag,
            })
            .unwrap_err()
            .to_string();
            let words: Vec<String> = key.choices.iter().map(|c| format!("`{c}`")).collect();
            assert!(
                errors.contains(&format!("expected one of {}", words.join(", "))),
                "{}: {errors}",
                key.dotted()
            );
        }
    }

    #[test]
    fn every_key_and_section_is_in_the_schemas() {
        let operator = operator_schema();
        for key in KEYS {
            assert!(
                operator["properties"][key.section]["properties"][key.name].is_object(),
                "{}",
                key.dotted()
            );
        }
        assert_eq!(operator["properties"]["server"]["additionalProperties"], false);
        let repo = repo_schema();
        assert!(
            repo["properties"]["chores"]["properties"]["deps"]["properties"]["rules"]["items"]["properties"]["match"]
                .is_object()
        );
        assert!(repo["properties"]["review"]["properties"]["auto"].is_object());
        assert_eq!(repo["properties"]["review"]["additionalProperties"], false);
    }
}
