//! The Docker engine for end-to-end tests: whether one is reachable (a loud skip when not, a failure
//! when `PITCREW_REQUIRE_DOCKER=1`) and the test image, built locally from Debian's static busybox
//! since no registry is reachable.

use std::path::Path;
use std::process::Command;

/// The image the sandbox tests run in; the unit tests in `bot/src/sandbox` build the same one.
pub const TEST_IMAGE: &str = "pitcrew-test-busybox:1";
const BUSYBOX: &str = "/bin/busybox";
const DOCKERFILE: &str =
    "FROM scratch\nCOPY busybox /bin/busybox\nRUN [\"/bin/busybox\", \"--install\", \"-s\", \"/bin\"]\n";

/// The test image's name, built if missing; `None` (said loudly on stderr) when there is no engine
/// and none is required.
#[expect(clippy::print_stderr, reason = "a skipped test must say so")]
pub fn test_image() -> Option<&'static str> {
    let required = std::env::var_os("PITCREW_REQUIRE_DOCKER").is_some_and(|v| v == "1");
    let why = if !Path::new(BUSYBOX).exists() {
        format!("{BUSYBOX} is missing (apt-get install busybox-static)")
    } else {
        match docker(&["version", "--format", "{{.Server.Version}}"]) {
            Ok(_) => match build() {
                Ok(()) => return Some(TEST_IMAGE),
                Err(err) => format!("building {TEST_IMAGE} failed: {err}"),
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

fn build() -> std::io::Result<()> {
    if docker(&["image", "inspect", TEST_IMAGE]).is_ok() {
        return Ok(());
    }
    let context = tempfile::tempdir()?;
    std::fs::write(context.path().join("Dockerfile"), DOCKERFILE)?;
    std::fs::copy(BUSYBOX, context.path().join("busybox"))?;
    let path = context.path().to_string_lossy().into_owned();
    // Builds racing from parallel test processes produce the same image; the last tag wins.
    docker(&["build", "-q", "-t", TEST_IMAGE, &path]).map(drop)
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
