//! The Docker engine for end-to-end tests: whether one is reachable (a loud skip when not, a failure
//! when `PITCREW_REQUIRE_DOCKER=1`) and the test images, built locally from Debian's static busybox
//! since no registry is reachable.

use std::path::Path;
use std::process::Command;

/// The image the sandbox tests run in; the unit tests in `bot/src/sandbox` build the same one.
pub const TEST_IMAGE: &str = "pitcrew-test-busybox:1";
/// The test image with [`DEV_CONTAINER_MARKER`] in it, for repositories whose dev container names
/// it: a command that reads the marker shows which image it runs in.
pub const DEV_CONTAINER_IMAGE: &str = "pitcrew-test-devcontainer:1";
/// Where [`DEV_CONTAINER_IMAGE`] holds [`DEV_CONTAINER_MARKER_TEXT`].
pub const DEV_CONTAINER_MARKER: &str = "/pitcrew-dev-container";
pub const DEV_CONTAINER_MARKER_TEXT: &str = "this is the dev container's image";
const BUSYBOX: &str = "/bin/busybox";
const DOCKERFILE: &str =
    "FROM scratch\nCOPY busybox /bin/busybox\nRUN [\"/bin/busybox\", \"--install\", \"-s\", \"/bin\"]\n";

/// The test image's name, built if missing; `None` (said loudly on stderr) when there is no engine
/// and none is required.
pub fn test_image() -> Option<&'static str> {
    image(TEST_IMAGE, DOCKERFILE, &[])
}

/// [`DEV_CONTAINER_IMAGE`]'s name, built if missing; `None` as for [`test_image`].
pub fn dev_container_image() -> Option<&'static str> {
    let dockerfile = format!("{DOCKERFILE}COPY marker {DEV_CONTAINER_MARKER}\n");
    image(
        DEV_CONTAINER_IMAGE,
        &dockerfile,
        &[("marker", &format!("{DEV_CONTAINER_MARKER_TEXT}\n"))],
    )
}

/// `tag`, built from `dockerfile` with busybox and `files` in its context if missing.
#[expect(clippy::print_stderr, reason = "a skipped test must say so")]
fn image(tag: &'static str, dockerfile: &str, files: &[(&str, &str)]) -> Option<&'static str> {
    let required = std::env::var_os("PITCREW_REQUIRE_DOCKER").is_some_and(|v| v == "1");
    let why = if !Path::new(BUSYBOX).exists() {
        format!("{BUSYBOX} is missing (apt-get install busybox-static)")
    } else {
        match docker(&["version", "--format", "{{.Server.Version}}"]) {
            Ok(_) => match build(tag, dockerfile, files) {
                Ok(()) => return Some(tag),
                Err(err) => format!("building {tag} failed: {err}"),
            },
            Err(err) => format!("no Docker engine is reachable: {err}"),
        }
    };
    assert!(!required, "PITCREW_REQUIRE_DOCKER=1, but {why}");
    eprintln!("SKIPPED: this test needs Docker: {why}");
    None
}

/// Labels of the containers pitcrew manages for `job`, if any are left.
pub fn containers_of(job: &str) -> std::io::Result<String> {
    docker(&[
        "ps",
        "-a",
        "--filter",
        &format!("label=pitcrew.job={job}"),
        "--format",
        "{{.Names}}",
    ])
}

fn build(tag: &str, dockerfile: &str, files: &[(&str, &str)]) -> std::io::Result<()> {
    if docker(&["image", "inspect", tag]).is_ok() {
        return Ok(());
    }
    let context = tempfile::tempdir()?;
    std::fs::write(context.path().join("Dockerfile"), dockerfile)?;
    std::fs::copy(BUSYBOX, context.path().join("busybox"))?;
    for (name, text) in files {
        std::fs::write(context.path().join(name), text)?;
    }
    let path = context.path().to_string_lossy().into_owned();
    // Builds racing from parallel test processes produce the same image; the last tag wins.
    docker(&["build", "-q", "-t", tag, &path]).map(drop)
}

fn docker(args: &[&str]) -> std::io::Result<String> {
    let output = Command::new("docker").args(args).output()?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(std::io::Error::other(
            String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        ))
    }
}
