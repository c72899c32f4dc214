//! A Rust project for the dependency-chore tests: a crate depending on two crates of the local
//! Cargo registry (`calcutil`, whose 2.0 renames `add`, and `fmtutil`), its `.cargo/config.toml`
//! pointing crates.io at that registry as a company mirror would, and its `Cargo.lock` made by
//! real cargo.

use std::path::Path;
use std::process::Command;

use tempfile::TempDir;

use crate::cargo_registry::CargoRegistry;

/// The crate's manifest: `calcutil = "1.0"`, `fmtutil = "0.3"`.
pub const MANIFEST: &str = "[package]\nname = \"tally\"\nversion = \"0.1.0\"\nedition = \"2021\"\npublish = false\n\n\
                        [dependencies]\ncalcutil = \"1.0\"\nfmtutil = \"0.3\"\n\n[workspace]\n";
/// Its code and its one test, which needs `calcutil::add`.
pub const LIB: &str = "pub fn total(a: u32, b: u32) -> String {\n    fmtutil::show(calcutil::add(a, b))\n}\n\n\
                   #[cfg(test)]\nmod tests {\n    #[test]\n    fn totals() {\n        assert_eq!(super::total(2, 3), \"5\");\n    }\n}\n";

/// `calcutil`'s `src/lib.rs` at `version`, its adding function named `function`.
pub fn calcutil(version: &str, function: &str) -> String {
    format!("pub const VERSION: &str = \"{version}\";\npub fn {function}(a: u32, b: u32) -> u32 {{\n    a + b\n}}\n")
}

/// `fmtutil`'s `src/lib.rs` at `version`.
pub fn fmtutil(version: &str) -> String {
    format!("pub const VERSION: &str = \"{version}\";\npub fn show(n: u32) -> String {{\n    n.to_string()\n}}\n")
}

/// `.cargo/config.toml` pointing crates.io at the local registry, as a company mirror would.
pub fn cargo_config(registry: &CargoRegistry) -> String {
    format!(
        "[source.crates-io]\nreplace-with = \"mirror\"\n\n[source.mirror]\nregistry = \"sparse+{}\"\n",
        registry.index_url()
    )
}

/// Runs `program` in `dir` with `env` (and network allowed); its stdout.
///
/// # Panics
/// When it cannot start or fails.
pub fn run(dir: &Path, program: &str, args: &[&str], env: &[(&str, &Path)]) -> String {
    let output = Command::new(program)
        .args(args)
        .current_dir(dir)
        .envs(env.iter().map(|(k, v)| (*k, v.as_os_str())))
        .env_remove("CARGO_NET_OFFLINE")
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(
        output.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Writes the project into `dir`: manifest, code, `.cargo/config.toml` for `registry`.
///
/// # Errors
/// When a file cannot be written.
pub fn write_project(dir: &Path, registry: &CargoRegistry) -> std::io::Result<()> {
    std::fs::create_dir_all(dir.join("src"))?;
    std::fs::create_dir_all(dir.join(".cargo"))?;
    std::fs::write(dir.join("Cargo.toml"), MANIFEST)?;
    std::fs::write(dir.join("src/lib.rs"), LIB)?;
    std::fs::write(dir.join(".cargo/config.toml"), cargo_config(registry))
}

/// `Cargo.lock` made by real cargo for the manifest against the registry as it is now.
///
/// # Panics
/// When the project cannot be written or cargo fails.
pub fn lockfile(registry: &CargoRegistry) -> String {
    let dir = TempDir::new().unwrap_or_else(|e| panic!("a temporary directory: {e}"));
    write_project(dir.path(), registry).unwrap_or_else(|e| panic!("writing the project: {e}"));
    let home = dir.path().join("cargo-home");
    run(dir.path(), "cargo", &["generate-lockfile"], &[("CARGO_HOME", &home)]);
    std::fs::read_to_string(dir.path().join("Cargo.lock")).unwrap_or_else(|e| panic!("Cargo.lock: {e}"))
}

/// The versions of `name` a `Cargo.lock` holds.
///
/// # Panics
/// When `lock` is not a lockfile.
pub fn locked(lock: &str, name: &str) -> Vec<String> {
    let lock: toml::Table = toml::from_str(lock).unwrap_or_else(|e| panic!("Cargo.lock is not TOML: {e}"));
    let packages = lock
        .get("package")
        .and_then(toml::Value::as_array)
        .cloned()
        .unwrap_or_default();
    packages
        .iter()
        .filter(|p| p.get("name").and_then(toml::Value::as_str) == Some(name))
        .filter_map(|p| p.get("version").and_then(toml::Value::as_str).map(str::to_owned))
        .collect()
}
