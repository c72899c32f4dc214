//! The removal-refusing Docker proxy against the real engine: everything but a removal passes
//! through it, hijacked `exec` streams included, and a removal fails as the engine's own would.

use std::process::Command;

use pitcrew_tests::docker::test_image;
use pitcrew_tests::docker_proxy::DockerProxy;

fn docker(host: Option<&str>, args: &[&str]) -> std::process::Output {
    let mut command = Command::new("docker");
    if let Some(host) = host {
        command.args(["-H", host]);
    }
    command.args(args).output().unwrap()
}

/// Removes the container through the engine itself, however the test ends.
struct Remove(String);

impl Drop for Remove {
    fn drop(&mut self) {
        let _ = docker(None, &["rm", "-f", &self.0]);
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).trim().to_owned()
}

#[test]
fn the_proxy_passes_everything_but_a_container_removal() {
    let Some(image) = test_image() else { return };
    let proxy = DockerProxy::refusing_removal().unwrap();
    let host = proxy.host();
    let name = format!("pitcrew-proxy-test-{}", std::process::id());
    let _remove = Remove(name.clone());
    let started = docker(
        Some(&host),
        &["run", "-d", "--name", &name, "--network", "none", image, "sleep", "300"],
    );
    assert!(started.status.success(), "{}", text(&started.stderr));

    // A hijacked stream with input both ways.
    let mut exec = Command::new("docker")
        .args([
            "-H",
            &host,
            "exec",
            "-i",
            &name,
            "sh",
            "-c",
            "read line; echo \"got $line\"",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write as _;
        let mut stdin = exec.stdin.take().unwrap();
        stdin.write_all(b"hello\n").unwrap();
    }
    let out = exec.wait_with_output().unwrap();
    assert_eq!(text(&out.stdout), "got hello");

    let removed = docker(Some(&host), &["rm", "-f", &name]);
    let stderr = text(&removed.stderr);
    assert!(!removed.status.success(), "the removal went through");
    assert!(stderr.contains("injected failure"), "{stderr}");
    assert_eq!(proxy.refused(), 1);
    let still = docker(None, &["inspect", "--format", "{{.State.Running}}", &name]);
    assert_eq!(text(&still.stdout), "true", "the container is still there");
}
