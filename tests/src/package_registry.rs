//! A local npm registry and PyPI for end-to-end tests, served over HTTP on `127.0.0.1`, so that
//! pitcrew's registry clients and real `npm` resolve against packages the test published.
//!
//! - npm, under [`PackageRegistry::npm_url`] (`http://127.0.0.1:PORT/npm/`): `GET {name}` (a scoped
//!   name as npm sends it, `@scope%2fpkg`) is the package document: `versions` (each with its
//!   `dependencies`, `deprecated` message when deprecated, and `dist`: `tarball`, `shasum`,
//!   `integrity`), `dist-tags.latest` (the highest release), `time` (when each version was
//!   published: long ago unless set), `repository` when set. Tarballs are
//!   real: a gzip'd tar of `package/package.json` made with the system's `tar`, hashed with
//!   `sha1sum` and `sha512sum`, served at `{name}/-/{basename}-{version}.tgz`.
//! - PyPI, under [`PackageRegistry::pypi_url`] (`http://127.0.0.1:PORT/`): `GET pypi/{name}/json`
//!   (any spelling of the name, PEP 503) is the project's JSON: `info` (with `project_urls` when
//!   set) and `releases`, one sdist per release (a real `.tar.gz` of its `PKG-INFO`, with its
//!   SHA-256, `yanked`, `requires_python` and `upload_time_iso_8601` as set), served at
//!   `packages/{file}`; and `GET
//!   simple/{name}/`, the simple repository API's page of its files (what pip and uv resolve
//!   from: `{pypi_url}simple`). The `PKG-INFO` is metadata 2.2 without dynamic fields, which
//!   installers read without building the sdist.
//!
//! Like the other fake servers it runs on a thread and runtime of its own; dropping the
//! [`PackageRegistry`] stops it. Every request is recorded ([`PackageRegistry::requests`]).
//!
//! ```no_run
//! use pitcrew_tests::package_registry::PackageRegistry;
//!
//! let registry = PackageRegistry::start();
//! registry.npm_publish("left-pad", "1.3.0", &[])?;
//! registry.npm_publish("@acme/util", "2.1.0", &[("left-pad", "^1.0.0")])?;
//! registry.npm_deprecate("left-pad", "1.3.0")?;
//! registry.pypi_release("requests", "2.32.3", false)?;
//! // npm install --registry {registry.npm_url()} …; Registries { npm, pypi, .. } from the URLs.
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
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use serde_json::{Map, Value, json};

use crate::server_thread::ServerThread;

/// Where the npm registry is on the server.
const NPM_PREFIX: &str = "/npm/";
/// Where PyPI's files are.
const FILES_PREFIX: &str = "/packages/";

/// A running registry. Dropping it stops the server.
#[derive(Debug)]
pub struct PackageRegistry {
    server: ServerThread,
    shared: Arc<Shared>,
}

/// One request the registry received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackageRequest {
    pub method: String,
    /// The path as sent (percent-encoding kept), e.g. `/npm/@acme%2futil`, `/pypi/requests/json`.
    pub path: String,
    /// The `Accept` header, when there was one.
    pub accept: Option<String>,
    pub status: u16,
}

#[derive(Debug, Default)]
struct Shared {
    /// `http://127.0.0.1:PORT`, known once the server is bound.
    base: OnceLock<String>,
    packages: Mutex<Packages>,
    requests: Mutex<Vec<PackageRequest>>,
}

#[derive(Debug, Default)]
struct Packages {
    /// npm name → its versions in publication order, and its repository.
    npm: BTreeMap<String, NpmPackage>,
    /// PEP 503 name → the project.
    pypi: BTreeMap<String, PypiProject>,
}

#[derive(Debug, Default)]
struct NpmPackage {
    versions: Vec<NpmVersion>,
    repository: Option<String>,
}

#[derive(Debug)]
struct NpmVersion {
    version: String,
    dependencies: Vec<(String, String)>,
    deprecated: Option<String>,
    tarball: Bytes,
    shasum: String,
    integrity: String,
    /// When it was published (the packument's `time`), RFC 3339.
    published: String,
}

#[derive(Debug)]
struct PypiProject {
    /// The name as first published.
    name: String,
    releases: Vec<PypiRelease>,
    project_urls: Vec<(String, String)>,
}

#[derive(Debug)]
struct PypiRelease {
    version: String,
    yanked: bool,
    requires_python: Option<String>,
    filename: String,
    sdist: Bytes,
    sha256: String,
    /// When its file was uploaded (`upload_time_iso_8601`), RFC 3339.
    uploaded: String,
}

/// Locks `mutex`; a test that panicked while holding it leaves consistent data behind.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// When a release is published unless a test says otherwise: long ago, so that no
/// `min_release_age` holds it back.
const LONG_AGO: &str = "2020-01-01T00:00:00.000Z";

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}

impl PackageRegistry {
    /// Starts an empty registry.
    ///
    /// # Panics
    /// When no socket or runtime can be had (see [`PackageRegistry::try_start`]).
    pub fn start() -> Self {
        match Self::try_start() {
            Ok(registry) => registry,
            Err(error) => panic!("package registry: could not start: {error}"),
        }
    }

    /// Starts an empty registry, reporting failure to bind or spawn.
    pub fn try_start() -> io::Result<Self> {
        let shared = Arc::new(Shared::default());
        let app = Router::new().fallback(handle).with_state(Arc::clone(&shared));
        let server = ServerThread::start("package-registry", app, 0)?;
        // Set before anyone learns the address, so no request can see it unset.
        let _ = shared.base.set(format!("http://{}", server.addr()));
        Ok(Self { server, shared })
    }

    /// The npm registry's root, `http://127.0.0.1:PORT/npm/` (npm's `--registry`).
    pub fn npm_url(&self) -> String {
        format!("http://{}{NPM_PREFIX}", self.server.addr())
    }

    /// PyPI's root, `http://127.0.0.1:PORT/` (`pypi/{name}/json` under it).
    pub fn pypi_url(&self) -> String {
        format!("http://{}/", self.server.addr())
    }

    /// Publishes npm package `name` `version` depending on `deps` (name, range), with a real
    /// tarball.
    ///
    /// # Errors
    /// A name npm would refuse, a version that is not semver-shaped or already published, or a
    /// failure of `tar`, `sha1sum` or `sha512sum`.
    pub fn npm_publish(&self, name: &str, version: &str, deps: &[(&str, &str)]) -> io::Result<()> {
        if !is_npm_name(name) {
            return Err(invalid(format!("`{name}` is not an npm package name")));
        }
        if !is_semver(version) {
            return Err(invalid(format!("`{version}` is not a version")));
        }
        if self.npm_find(name, version, |_| ()).is_some() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{name}@{version} is already published"),
            ));
        }
        let manifest = json!({
            "name": name,
            "version": version,
            "description": "A package of the test registry.",
            "license": "MIT",
            "main": "index.js",
            "dependencies": deps.iter().map(|(n, r)| ((*n).to_owned(), json!(r))).collect::<Map<_, _>>(),
        });
        let tarball = tar_gz(&[
            ("package/package.json", format!("{manifest:#}\n")),
            ("package/index.js", "module.exports = {};\n".to_owned()),
        ])?;
        let shasum = digest("sha1sum", &tarball, 40)?;
        let sha512 = digest("sha512sum", &tarball, 128)?;
        let integrity = format!("sha512-{}", STANDARD.encode(from_hex(&sha512)?));
        lock(&self.shared.packages)
            .npm
            .entry(name.to_owned())
            .or_default()
            .versions
            .push(NpmVersion {
                version: version.to_owned(),
                dependencies: deps.iter().map(|(n, r)| ((*n).to_owned(), (*r).to_owned())).collect(),
                deprecated: None,
                tarball,
                shasum,
                integrity,
                published: LONG_AGO.to_owned(),
            });
        Ok(())
    }

    /// Sets when npm package `name` `version` was published (RFC 3339), as its packument's `time`
    /// says; [`PackageRegistry::npm_publish`] dates a version long ago.
    ///
    /// # Errors
    /// When that version was never published.
    pub fn npm_published_at(&self, name: &str, version: &str, time: &str) -> io::Result<()> {
        self.npm_find(name, version, |v| time.clone_into(&mut v.published))
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("{name}@{version} is not published")))
    }

    /// Deprecates npm package `name` `version`, as `npm deprecate` does: its metadata carries a
    /// `deprecated` message.
    ///
    /// # Errors
    /// When that version was never published.
    pub fn npm_deprecate(&self, name: &str, version: &str) -> io::Result<()> {
        self.npm_find(name, version, |v| {
            v.deprecated = Some(format!("{name}@{version} is broken: use a newer version"));
        })
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("{name}@{version} is not published")))
    }

    /// Sets npm package `name`'s `repository` URL (`git+https://github.com/o/r.git`, …).
    ///
    /// # Errors
    /// When the package was never published.
    pub fn npm_repository(&self, name: &str, url: &str) -> io::Result<()> {
        let mut packages = lock(&self.shared.packages);
        let package = packages
            .npm
            .get_mut(name)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("{name} is not published")))?;
        package.repository = Some(url.to_owned());
        Ok(())
    }

    /// Releases Python project `name` `version` (an sdist), its file yanked or not.
    ///
    /// # Errors
    /// A name or version PyPI would refuse, a version already released, or a failure of `tar` or
    /// `sha256sum`.
    pub fn pypi_release(&self, name: &str, version: &str, yanked: bool) -> io::Result<()> {
        self.publish_pypi(name, version, yanked, None)
    }

    /// Releases Python project `name` `version` whose file installs only on the Pythons
    /// `requires_python` admits (`>=3.9`): PyPI's per-file `requires_python`, and `Requires-Python`
    /// in the sdist's `PKG-INFO`.
    ///
    /// # Errors
    /// As [`PackageRegistry::pypi_release`].
    pub fn pypi_release_requiring(&self, name: &str, version: &str, requires_python: &str) -> io::Result<()> {
        self.publish_pypi(name, version, false, Some(requires_python))
    }

    fn publish_pypi(&self, name: &str, version: &str, yanked: bool, requires_python: Option<&str>) -> io::Result<()> {
        let key = pep503(name);
        let name_ok = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
            && name.as_bytes()[0].is_ascii_alphanumeric();
        if !name_ok {
            return Err(invalid(format!("`{name}` is not a Python project name")));
        }
        let version_ok = !version.is_empty()
            && version.as_bytes()[0].is_ascii_digit()
            && version
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'!' | b'+'));
        if !version_ok {
            return Err(invalid(format!("`{version}` is not a version")));
        }
        let mut packages = lock(&self.shared.packages);
        if packages
            .pypi
            .get(&key)
            .is_some_and(|p| p.releases.iter().any(|r| r.version == version))
        {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{name} {version} is already released"),
            ));
        }
        drop(packages);
        let base = format!("{}-{version}", name.replace(['-', '.'], "_"));
        let mut pkg_info = format!(
            "Metadata-Version: 2.2\nName: {name}\nVersion: {version}\nSummary: A project of the test registry.\n"
        );
        if let Some(spec) = requires_python {
            pkg_info.push_str(&format!("Requires-Python: {spec}\n"));
        }
        let sdist = tar_gz(&[(&format!("{base}/PKG-INFO"), pkg_info)])?;
        let sha256 = digest("sha256sum", &sdist, 64)?;
        packages = lock(&self.shared.packages);
        let project = packages.pypi.entry(key).or_insert_with(|| PypiProject {
            name: name.to_owned(),
            releases: Vec::new(),
            project_urls: Vec::new(),
        });
        project.releases.push(PypiRelease {
            version: version.to_owned(),
            yanked,
            requires_python: requires_python.map(str::to_owned),
            filename: format!("{base}.tar.gz"),
            sdist,
            sha256,
            uploaded: LONG_AGO.to_owned(),
        });
        Ok(())
    }

    /// Sets when Python project `name` `version`'s file was uploaded (RFC 3339, PyPI's
    /// `upload_time_iso_8601`); a release is otherwise dated long ago.
    ///
    /// # Errors
    /// When that version was never released.
    pub fn pypi_uploaded_at(&self, name: &str, version: &str, time: &str) -> io::Result<()> {
        let mut packages = lock(&self.shared.packages);
        let release = packages
            .pypi
            .get_mut(&pep503(name))
            .and_then(|p| p.releases.iter_mut().find(|r| r.version == version))
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("{name} {version} is not released")))?;
        time.clone_into(&mut release.uploaded);
        Ok(())
    }

    /// Adds `label` → `url` to project `name`'s `project_urls` (`Changelog`, `Homepage`, …).
    ///
    /// # Errors
    /// When the project has no release.
    pub fn pypi_project_url(&self, name: &str, label: &str, url: &str) -> io::Result<()> {
        let mut packages = lock(&self.shared.packages);
        let project = packages
            .pypi
            .get_mut(&pep503(name))
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("{name} has no release")))?;
        project.project_urls.push((label.to_owned(), url.to_owned()));
        Ok(())
    }

    /// Every request so far, in order.
    pub fn requests(&self) -> Vec<PackageRequest> {
        lock(&self.shared.requests).clone()
    }

    fn npm_find<T>(&self, name: &str, version: &str, with: impl FnOnce(&mut NpmVersion) -> T) -> Option<T> {
        let mut packages = lock(&self.shared.packages);
        let found = packages
            .npm
            .get_mut(name)?
            .versions
            .iter_mut()
            .find(|v| v.version == version)?;
        Some(with(found))
    }
}

/// A name npm accepts: lowercase, URL-safe, optionally `@scope/`.
fn is_npm_name(name: &str) -> bool {
    let part_ok = |part: &str| {
        !part.is_empty()
            && !part.starts_with(['.', '_'])
            && part
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'-' | b'.' | b'_' | b'~'))
    };
    match name.strip_prefix('@') {
        Some(scoped) => scoped
            .split_once('/')
            .is_some_and(|(scope, pkg)| part_ok(scope) && part_ok(pkg)),
        None => part_ok(name),
    }
}

/// `MAJOR.MINOR.PATCH` with an optional `-pre` or `+build`.
fn is_semver(version: &str) -> bool {
    version.split(['-', '+']).next().is_some_and(|core| {
        let parts: Vec<&str> = core.split('.').collect();
        parts.len() == 3
            && parts
                .iter()
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// The numbers of a semver version, for picking the highest release (`None` for a pre-release).
fn release_key(version: &str) -> Option<(u64, u64, u64)> {
    if version.contains('-') {
        return None;
    }
    let mut parts = version.split('+').next()?.split('.').map(|p| p.parse::<u64>().ok());
    Some((parts.next()??, parts.next()??, parts.next()??))
}

/// A project name as PyPI compares names (PEP 503).
fn pep503(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            if !out.ends_with('-') {
                out.push('-');
            }
        } else {
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

/// A gzip'd tar of `files` (path, content), made by the system's `tar`.
fn tar_gz(files: &[(&str, String)]) -> io::Result<Bytes> {
    let work = tempfile::tempdir()?;
    let root = work.path().join("content");
    let mut top = Vec::new();
    for (path, content) in files {
        let target = root.join(path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&target, content)?;
        let first = path.split('/').next().unwrap_or(path).to_owned();
        if !top.contains(&first) {
            top.push(first);
        }
    }
    let archive = work.path().join("archive.tar.gz");
    run(Command::new("tar")
        .args(["--owner=0", "--group=0", "--numeric-owner", "--mtime=@0", "-czf"])
        .arg(&archive)
        .arg("-C")
        .arg(&root)
        .args(&top))?;
    Ok(Bytes::from(std::fs::read(&archive)?))
}

/// The hex digest `tool` (`sha1sum`, `sha256sum`, `sha512sum`) prints for `bytes`.
fn digest(tool: &str, bytes: &[u8], hex_len: usize) -> io::Result<String> {
    let work = tempfile::tempdir()?;
    let file = work.path().join("blob");
    std::fs::write(&file, bytes)?;
    let printed = run(Command::new(tool).arg(&file))?;
    match printed.split_whitespace().next() {
        Some(hex) if hex.len() == hex_len && hex.bytes().all(|b| b.is_ascii_hexdigit()) => Ok(hex.to_owned()),
        _ => Err(io::Error::other(format!("{tool} printed {printed:?}"))),
    }
}

fn from_hex(hex: &str) -> io::Result<Vec<u8>> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).map_err(|e| io::Error::other(format!("{hex}: {e}"))))
        .collect()
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

/// `%XX` sequences decoded (npm sends a scoped name's slash as `%2f`).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let accept = request
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let (status, content_type, body) = if method == Method::GET {
        answer(&shared, &path)
    } else {
        (
            StatusCode::METHOD_NOT_ALLOWED,
            "application/json",
            Bytes::from(json!({"error": "read-only registry"}).to_string()),
        )
    };
    lock(&shared.requests).push(PackageRequest {
        method: method.to_string(),
        path,
        accept,
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
    let not_found = (
        StatusCode::NOT_FOUND,
        "application/json",
        Bytes::from(json!({"error": "Not found"}).to_string()),
    );
    let base = shared.base.get().map_or("", String::as_str);
    let packages = lock(&shared.packages);
    if let Some(rest) = path.strip_prefix(NPM_PREFIX) {
        let rest = percent_decode(rest);
        if let Some((name, file)) = rest.split_once("/-/") {
            let Some(package) = packages.npm.get(name) else {
                return not_found;
            };
            return match package.versions.iter().find(|v| file == tarball_name(name, &v.version)) {
                Some(version) => (StatusCode::OK, "application/octet-stream", version.tarball.clone()),
                None => not_found,
            };
        }
        return match packages.npm.get(&rest) {
            Some(package) => {
                let document = packument(base, &rest, package);
                (StatusCode::OK, "application/json", Bytes::from(document.to_string()))
            }
            None => not_found,
        };
    }
    if let Some(file) = path.strip_prefix(FILES_PREFIX) {
        let sdist = packages
            .pypi
            .values()
            .flat_map(|p| &p.releases)
            .find(|r| r.filename == file);
        return match sdist {
            Some(release) => (StatusCode::OK, "application/gzip", release.sdist.clone()),
            None => not_found,
        };
    }
    if let Some(name) = path.strip_prefix("/pypi/").and_then(|rest| rest.strip_suffix("/json")) {
        return match packages.pypi.get(&pep503(&percent_decode(name))) {
            Some(project) => {
                let document = pypi_json(base, project);
                (StatusCode::OK, "application/json", Bytes::from(document.to_string()))
            }
            None => not_found,
        };
    }
    if let Some(name) = path.strip_prefix("/simple/").map(|rest| rest.trim_end_matches('/')) {
        return match packages.pypi.get(&pep503(&percent_decode(name))) {
            Some(project) => (StatusCode::OK, "text/html", Bytes::from(simple_page(base, project))),
            None => not_found,
        };
    }
    not_found
}

/// The project's page of the simple repository API (PEP 503, with PEP 592's `data-yanked` and
/// PEP 345's `data-requires-python`), what pip and uv read.
fn simple_page(base: &str, project: &PypiProject) -> String {
    let escape = |text: &str| {
        text.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
    };
    let mut page = format!(
        "<!DOCTYPE html>\n<html><body><h1>Links for {}</h1>\n",
        escape(&project.name)
    );
    for release in &project.releases {
        let mut attributes = String::new();
        if let Some(spec) = &release.requires_python {
            attributes.push_str(&format!(" data-requires-python=\"{}\"", escape(spec)));
        }
        if release.yanked {
            attributes.push_str(" data-yanked=\"yanked by the test\"");
        }
        page.push_str(&format!(
            "<a href=\"{base}{FILES_PREFIX}{}#sha256={}\"{attributes}>{}</a><br/>\n",
            release.filename,
            release.sha256,
            escape(&release.filename)
        ));
    }
    page.push_str("</body></html>\n");
    page
}

/// `left-pad-1.3.0.tgz`; for `@scope/pkg`, `pkg-1.3.0.tgz` (npm's own naming).
fn tarball_name(name: &str, version: &str) -> String {
    let basename = name.rsplit('/').next().unwrap_or(name);
    format!("{basename}-{version}.tgz")
}

/// The package document npm and pitcrew read.
fn packument(base: &str, name: &str, package: &NpmPackage) -> Value {
    let mut versions = Map::new();
    for v in &package.versions {
        let dependencies: Map<String, Value> = v.dependencies.iter().map(|(n, r)| (n.clone(), json!(r))).collect();
        let mut entry = json!({
            "name": name,
            "version": v.version,
            "_id": format!("{name}@{}", v.version),
            "description": "A package of the test registry.",
            "license": "MIT",
            "main": "index.js",
            "dependencies": dependencies,
            "dist": {
                "tarball": format!("{base}{NPM_PREFIX}{name}/-/{}", tarball_name(name, &v.version)),
                "shasum": v.shasum,
                "integrity": v.integrity,
            },
        });
        if let Some(message) = &v.deprecated {
            entry["deprecated"] = json!(message);
        }
        if let Some(url) = &package.repository {
            entry["repository"] = json!({"type": "git", "url": url});
        }
        versions.insert(v.version.clone(), entry);
    }
    let latest = package
        .versions
        .iter()
        .filter_map(|v| release_key(&v.version).map(|key| (key, &v.version)))
        .max()
        .map(|(_, version)| version.clone());
    let mut time: Map<String, Value> = package
        .versions
        .iter()
        .map(|v| (v.version.clone(), json!(v.published)))
        .collect();
    if let Some(first) = package.versions.iter().map(|v| v.published.clone()).min() {
        time.insert("created".to_owned(), json!(first));
    }
    let mut document = json!({
        "_id": name,
        "name": name,
        "dist-tags": latest.map_or_else(|| json!({}), |latest| json!({"latest": latest})),
        "versions": versions,
        "time": time,
    });
    if let Some(url) = &package.repository {
        document["repository"] = json!({"type": "git", "url": url});
    }
    document
}

/// PyPI's JSON for a project.
fn pypi_json(base: &str, project: &PypiProject) -> Value {
    let file_json = |release: &PypiRelease| {
        json!({
            "filename": release.filename,
            "packagetype": "sdist",
            "python_version": "source",
            "url": format!("{base}{FILES_PREFIX}{}", release.filename),
            "digests": {"sha256": release.sha256},
            "size": release.sdist.len(),
            "requires_python": release.requires_python,
            "upload_time_iso_8601": release.uploaded,
            "yanked": release.yanked,
            "yanked_reason": if release.yanked { json!("yanked by the test") } else { Value::Null },
        })
    };
    let releases: Map<String, Value> = project
        .releases
        .iter()
        .map(|r| (r.version.clone(), json!([file_json(r)])))
        .collect();
    // Like PyPI, `info` and `urls` describe the newest release that is not yanked.
    let latest = project
        .releases
        .iter()
        .rev()
        .find(|r| !r.yanked)
        .or(project.releases.last());
    let project_urls: Map<String, Value> = project
        .project_urls
        .iter()
        .map(|(label, url)| (label.clone(), json!(url)))
        .collect();
    json!({
        "info": {
            "name": project.name,
            "version": latest.map(|r| r.version.clone()),
            "summary": "A project of the test registry.",
            "project_urls": if project_urls.is_empty() { Value::Null } else { Value::Object(project_urls) },
            "yanked": latest.is_some_and(|r| r.yanked),
        },
        "releases": releases,
        "urls": latest.map(|r| vec![file_json(r)]).unwrap_or_default(),
    })
}
