//! A real Cargo registry for end-to-end tests: a sparse index (`config.json` and one file per crate
//! in the index's prefix layout, each line with the `.crate` file's SHA-256) and the `.crate`
//! downloads it names, served over HTTP on `127.0.0.1`, so that real `cargo` resolves, locks,
//! downloads and builds against crates the test published.
//!
//! A published crate is a real `.crate` file: a gzip'd tar of `name-version/Cargo.toml` and
//! `name-version/src/lib.rs`, made with the system's `tar` and hashed with `sha256sum`. Like the
//! other fake servers it runs on a thread and runtime of its own; dropping the [`CargoRegistry`]
//! stops it. Every request is recorded ([`CargoRegistry::requests`]). Its `config.json` names its
//! web API, which answers `GET api/v1/crates/{name}/versions` with each version's `created_at`
//! (long ago, unless [`CargoRegistry::set_published`] says otherwise), as crates.io's does.
//!
//! ```no_run
//! use pitcrew_tests::cargo_registry::CargoRegistry;
//!
//! let registry = CargoRegistry::start();
//! registry.publish("calcutil", "1.0.0", "pub fn add(a: i32, b: i32) -> i32 { a + b }\n", &[])?;
//! registry.publish("report", "0.2.0", "pub use calcutil::add;\n", &[("calcutil", "^1.0")])?;
//! registry.yank("calcutil", "1.0.0")?;
//! // cargo --config 'source.crates-io.replace-with="test"' \
//! //       --config 'source.test.registry="sparse+{registry.index_url()}"' …
//! # Ok::<(), std::io::Error>(())
//! ```

use std::collections::BTreeMap;
use std::io;
use std::process::Command;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, header};
use axum::response::Response;
use bytes::Bytes;
use serde_json::json;

use crate::server_thread::ServerThread;

/// A running registry. Dropping it stops the server.
#[derive(Debug)]
pub struct CargoRegistry {
    server: ServerThread,
    shared: Arc<Shared>,
}

/// One request the registry received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryRequest {
    pub method: String,
    /// The path, e.g. `/config.json`, `/ca/lc/calcutil`, `/api/v1/crates/calcutil/1.1.0/download`.
    pub path: String,
    pub status: u16,
}

#[derive(Debug, Default)]
struct Shared {
    /// `http://127.0.0.1:PORT/`, known once the server is bound.
    base: OnceLock<String>,
    /// Lowercase crate name → its versions in publication order.
    crates: Mutex<BTreeMap<String, Vec<Published>>>,
    requests: Mutex<Vec<RegistryRequest>>,
}

#[derive(Debug)]
struct Published {
    name: String,
    version: String,
    deps: Vec<(String, String)>,
    cksum: String,
    yanked: bool,
    /// The `rust_version` its index line declares, when it declares one.
    rust_version: Option<String>,
    /// When it was published (RFC 3339), as the API says.
    created_at: String,
    file: Bytes,
}

/// Locks `mutex`; a test that panicked while holding it leaves consistent data behind.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl CargoRegistry {
    /// Starts an empty registry.
    ///
    /// # Panics
    /// When no socket or runtime can be had (see [`CargoRegistry::try_start`]).
    pub fn start() -> Self {
        match Self::try_start() {
            Ok(registry) => registry,
            Err(error) => panic!("cargo registry: could not start: {error}"),
        }
    }

    /// Starts an empty registry, reporting failure to bind or spawn.
    pub fn try_start() -> io::Result<Self> {
        let shared = Arc::new(Shared::default());
        let app = Router::new().fallback(handle).with_state(Arc::clone(&shared));
        let server = ServerThread::start("cargo-registry", app, 0)?;
        // Set before anyone learns the address, so no request can see it unset.
        let _ = shared.base.set(format!("http://{}/", server.addr()));
        Ok(Self { server, shared })
    }

    /// The sparse index's root, `http://127.0.0.1:PORT/` (Cargo wants `sparse+` before it).
    pub fn index_url(&self) -> String {
        format!("http://{}/", self.server.addr())
    }

    /// Publishes `name` `version` with `lib_rs` as its `src/lib.rs` and `deps` (name, requirement)
    /// as its `[dependencies]`, from this registry.
    ///
    /// # Errors
    /// A name Cargo would refuse, a version that is not semver-shaped or already published, or a
    /// failure of `tar` or `sha256sum`.
    pub fn publish(&self, name: &str, version: &str, lib_rs: &str, deps: &[(&str, &str)]) -> io::Result<()> {
        self.publish_with(name, version, lib_rs, deps, None)
    }

    /// [`CargoRegistry::publish`] of a release whose index line declares `rust_version`
    /// (`"1.70"`), as crates.io's does for a package with a `rust-version`.
    ///
    /// # Errors
    /// As [`CargoRegistry::publish`].
    pub fn publish_with_rust_version(
        &self,
        name: &str,
        version: &str,
        lib_rs: &str,
        deps: &[(&str, &str)],
        rust_version: &str,
    ) -> io::Result<()> {
        self.publish_with(name, version, lib_rs, deps, Some(rust_version))
    }

    fn publish_with(
        &self,
        name: &str,
        version: &str,
        lib_rs: &str,
        deps: &[(&str, &str)],
        rust_version: Option<&str>,
    ) -> io::Result<()> {
        if index_path(name).is_none() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("`{name}` is not a crate name"),
            ));
        }
        let shaped = version.split(['-', '+']).next().is_some_and(|core| {
            let parts: Vec<&str> = core.split('.').collect();
            parts.len() == 3
                && parts
                    .iter()
                    .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        });
        if !shaped {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("`{version}` is not a version"),
            ));
        }
        if self.find(name, version, |_| ()).is_some() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{name} {version} is already published"),
            ));
        }
        let (file, cksum) = package(name, version, lib_rs, deps)?;
        lock(&self.shared.crates)
            .entry(name.to_ascii_lowercase())
            .or_default()
            .push(Published {
                name: name.to_owned(),
                version: version.to_owned(),
                deps: deps.iter().map(|(n, r)| ((*n).to_owned(), (*r).to_owned())).collect(),
                cksum,
                yanked: false,
                rust_version: rust_version.map(str::to_owned),
                created_at: "2020-01-01T00:00:00.000000+00:00".to_owned(),
                file,
            });
        Ok(())
    }

    /// Marks `name` `version` yanked: the index says so; the file stays downloadable, as on
    /// crates.io, for lockfiles that already have it.
    ///
    /// # Errors
    /// When that version was never published.
    pub fn yank(&self, name: &str, version: &str) -> io::Result<()> {
        self.find(name, version, |published| published.yanked = true)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("{name} {version} is not published")))
    }

    /// Says `name` `version` was published at `created_at` (RFC 3339, as crates.io writes it:
    /// `2026-12-02T10:00:00.000000+00:00`).
    ///
    /// # Errors
    /// When that version was never published.
    pub fn set_published(&self, name: &str, version: &str, created_at: &str) -> io::Result<()> {
        self.find(name, version, |published| published.created_at = created_at.to_owned())
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("{name} {version} is not published")))
    }

    /// Every request so far, in order.
    pub fn requests(&self) -> Vec<RegistryRequest> {
        lock(&self.shared.requests).clone()
    }

    fn find<T>(&self, name: &str, version: &str, with: impl FnOnce(&mut Published) -> T) -> Option<T> {
        let mut crates = lock(&self.shared.crates);
        let published = crates
            .get_mut(&name.to_ascii_lowercase())?
            .iter_mut()
            .find(|p| p.version == version)?;
        Some(with(published))
    }
}

/// Where `name`'s index file is: the lowercase name under `1/`, `2/`, `3/{a}/` or `{ab}/{cd}/`.
/// `None` for a name Cargo would refuse.
fn index_path(name: &str) -> Option<String> {
    let valid = !name.is_empty()
        && name.len() <= 64
        && name.as_bytes()[0].is_ascii_alphabetic()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if !valid {
        return None;
    }
    let name = name.to_ascii_lowercase();
    Some(match name.len() {
        1 => format!("1/{name}"),
        2 => format!("2/{name}"),
        3 => format!("3/{}/{name}", &name[..1]),
        _ => format!("{}/{}/{name}", &name[..2], &name[2..4]),
    })
}

/// Makes the `.crate` file of a generated crate; returns it and its SHA-256 in hex.
fn package(name: &str, version: &str, lib_rs: &str, deps: &[(&str, &str)]) -> io::Result<(Bytes, String)> {
    let work = tempfile::tempdir()?;
    let dir_name = format!("{name}-{version}");
    let dir = work.path().join(&dir_name);
    std::fs::create_dir_all(dir.join("src"))?;
    let mut manifest = format!(
        "[package]\nname = \"{name}\"\nversion = \"{version}\"\nedition = \"2021\"\n\
         description = \"A crate of the test registry.\"\nlicense = \"MIT\"\n\n[dependencies]\n"
    );
    for (dep, requirement) in deps {
        manifest.push_str(&format!("{dep} = \"{requirement}\"\n"));
    }
    std::fs::write(dir.join("Cargo.toml"), manifest)?;
    std::fs::write(dir.join("src/lib.rs"), lib_rs)?;
    let file = work.path().join(format!("{dir_name}.crate"));
    run(Command::new("tar")
        .args(["--owner=0", "--group=0", "--numeric-owner", "-czf"])
        .arg(&file)
        .arg("-C")
        .arg(work.path())
        .arg(&dir_name))?;
    let sum = run(Command::new("sha256sum").arg(&file))?;
    let cksum = match sum.split_whitespace().next() {
        Some(hex) if hex.len() == 64 => hex.to_owned(),
        _ => return Err(io::Error::other(format!("sha256sum printed {sum:?}"))),
    };
    Ok((Bytes::from(std::fs::read(&file)?), cksum))
}

/// Runs `command`; its stdout, or an error with its stderr.
fn run(command: &mut Command) -> io::Result<String> {
    let program = command.get_program().to_string_lossy().into_owned();
    let output = command
        .output()
        .map_err(|e| io::Error::new(e.kind(), format!("{program}: {e}")))?;
    if !output.status.success() {
        return Err(io::Error::other(format!(
            "{program} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let (status, content_type, body) = if method == Method::GET {
        answer(&shared, &path)
    } else {
        (
            StatusCode::METHOD_NOT_ALLOWED,
            "text/plain",
            Bytes::from_static(b"read-only registry\n"),
        )
    };
    lock(&shared.requests).push(RegistryRequest {
        method: method.to_string(),
        path,
        status: status.as_u16(),
    });
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    if let Ok(value) = content_type.parse() {
        response.headers_mut().insert(header::CONTENT_TYPE, value);
    }
    response
}

fn answer(shared: &Shared, path: &str) -> (StatusCode, &'static str, Bytes) {
    let not_found = (StatusCode::NOT_FOUND, "text/plain", Bytes::from_static(b"not found\n"));
    if path == "/config.json" {
        let base = shared.base.get().map_or("", String::as_str);
        let config = json!({
            "dl": format!("{base}api/v1/crates/{{crate}}/{{version}}/download"),
            "api": base.trim_end_matches('/'),
        });
        return (StatusCode::OK, "application/json", Bytes::from(config.to_string()));
    }
    let crates = lock(&shared.crates);
    if let Some(rest) = path.strip_prefix("/api/v1/crates/") {
        if let [name, "versions"] = rest.split('/').collect::<Vec<_>>()[..] {
            let Some(versions) = crates.get(&name.to_ascii_lowercase()) else {
                return not_found;
            };
            let listed: Vec<_> = versions
                .iter()
                .rev()
                .map(|p| json!({"num": p.version, "created_at": p.created_at, "yanked": p.yanked}))
                .collect();
            let page = json!({"versions": listed, "meta": {"total": listed.len(), "next_page": null}});
            return (StatusCode::OK, "application/json", Bytes::from(page.to_string()));
        }
        let [name, version, "download"] = rest.split('/').collect::<Vec<_>>()[..] else {
            return not_found;
        };
        return match crates
            .get(&name.to_ascii_lowercase())
            .and_then(|versions| versions.iter().find(|p| p.version == version))
        {
            Some(published) => (StatusCode::OK, "application/gzip", published.file.clone()),
            None => not_found,
        };
    }
    let relative = path.trim_start_matches('/');
    let name = relative.rsplit('/').next().unwrap_or_default();
    if index_path(name).as_deref() != Some(relative) {
        return not_found;
    }
    let Some(versions) = crates.get(name) else {
        return not_found;
    };
    let lines: String = versions.iter().map(|p| index_line(p) + "\n").collect();
    (StatusCode::OK, "text/plain", Bytes::from(lines))
}

/// A version's line in the index, as crates.io writes it.
fn index_line(published: &Published) -> String {
    let deps: Vec<_> = published
        .deps
        .iter()
        .map(|(name, requirement)| {
            json!({
                "name": name,
                "req": requirement,
                "features": [],
                "optional": false,
                "default_features": true,
                "target": null,
                "kind": "normal",
            })
        })
        .collect();
    let mut line = json!({
        "name": published.name,
        "vers": published.version,
        "deps": deps,
        "cksum": published.cksum,
        "features": {},
        "yanked": published.yanked,
    });
    if let (Some(rust_version), Some(fields)) = (&published.rust_version, line.as_object_mut()) {
        fields.insert("rust_version".to_owned(), json!(rust_version));
    }
    line.to_string()
}
