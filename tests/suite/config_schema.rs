//! The checked-in JSON Schemas (`schema/`) as an editor would use them: checked by a validator of
//! their own (Python's `jsonschema`, with TOML read by `tomllib`), they accept the README's example
//! files and refuse a misspelt key.

#![expect(clippy::unwrap_used, reason = "tests")]

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Validates TOML (standard input) against the schema (first argument) with the Draft 2020-12
/// validator; prints each error's path and message, or `ok`.
const VALIDATE: &str = r#"
import json, sys, tomllib
import jsonschema
schema = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator.check_schema(schema)
document = tomllib.loads(sys.stdin.read())
errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(document), key=lambda e: list(e.path))
for error in errors:
    print("/".join(str(p) for p in error.path) + ": " + error.message)
if not errors:
    print("ok")
"#;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn validate(schema: &str, toml: &str) -> String {
    let mut child = Command::new("python3")
        .arg("-c")
        .arg(VALIDATE)
        .arg(root().join(schema))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(toml.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "the validator failed (python3 -m pip install jsonschema): {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

/// The README's TOML examples, each with the schema of the file it shows: a repository's under the
/// `.github/pitcrew.toml` heading, the operator's elsewhere.
fn readme_examples() -> Vec<(&'static str, String)> {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let mut examples = Vec::new();
    let mut heading = String::new();
    let mut block: Option<String> = None;
    for line in readme.lines() {
        match &mut block {
            Some(text) if line == "```" => {
                let schema = if heading.contains(".github/pitcrew.toml") {
                    "schema/pitcrew-repo.schema.json"
                } else {
                    "schema/pitcrew.schema.json"
                };
                examples.push((schema, std::mem::take(text)));
                block = None;
            }
            Some(text) => {
                text.push_str(line);
                text.push('\n');
            }
            None if line == "```toml" => block = Some(String::new()),
            None if line.starts_with('#') => heading = line.to_owned(),
            None => {}
        }
    }
    examples
}

#[test]
fn the_schemas_accept_the_readmes_examples_and_refuse_a_misspelt_key() {
    let examples = readme_examples();
    assert!(examples.len() >= 3, "{examples:?}");
    assert!(examples.iter().any(|(schema, _)| schema.contains("repo")));
    for (schema, toml) in &examples {
        assert_eq!(validate(schema, toml), "ok", "{schema}:\n{toml}");
    }
    // The same examples with every commented-out setting set, as a reader would uncomment them.
    for (schema, toml) in &examples {
        let uncommented: String = toml
            .lines()
            .map(|line| match line.strip_prefix("# ") {
                Some(setting) if setting.contains(" = ") && !setting.starts_with('[') => format!("{setting}\n"),
                _ => format!("{line}\n"),
            })
            .collect();
        assert_eq!(validate(schema, &uncommented), "ok", "{schema}:\n{uncommented}");
    }

    assert_eq!(
        validate("schema/pitcrew.schema.json", "[server]\nlisen = \"0.0.0.0:8080\"\n"),
        "server: Additional properties are not allowed ('lisen' was unexpected)"
    );
    assert_eq!(
        validate("schema/pitcrew.schema.json", "[server]\nconcurrency = \"four\"\n"),
        "server/concurrency: 'four' is not of type 'integer'"
    );
    assert_eq!(
        validate("schema/pitcrew.schema.json", "[model]\nprovider = \"antropic\"\n"),
        "model/provider: 'antropic' is not one of ['openai', 'anthropic']"
    );
    assert_eq!(
        validate("schema/pitcrew-repo.schema.json", "[reveiw]\nauto = true\n"),
        ": Additional properties are not allowed ('reveiw' was unexpected)"
    );
    assert_eq!(
        validate(
            "schema/pitcrew-repo.schema.json",
            "[[chores.deps.rules]]\nmatch = \"serde*\"\nignroe = true\n"
        ),
        "chores/deps/rules/0: Additional properties are not allowed ('ignroe' was unexpected)"
    );
}
