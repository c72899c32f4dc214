//! Sandbox overhead: the wall time of `true` through the Docker backend's persistent shell session,
//! through one `docker exec` per command (its fallback mode) and through the local backend, 200
//! calls each (median and p90); and a container's life cycle: `start` (create, start, shell ready)
//! and `stop` (remove), 10 times (median).
//!
//! Needs a Docker engine and the host's static busybox (`/bin/busybox`, Debian's
//! `busybox-static`), from which it builds the same `FROM scratch` image as the tests.
//!
//! Run: `cargo bench -p pitcrew --bench sandbox` (figures go in BENCHMARKS.md).

#![allow(
    clippy::print_stderr,
    clippy::print_stdout,
    reason = "a benchmark reports on the terminal"
)]

use std::time::{Duration, Instant};

use bollard::query_parameters::BuildImageOptionsBuilder;
use futures_util::StreamExt;
use pitcrew::sandbox::docker::{DockerSandbox, DockerSpec};
use pitcrew::sandbox::local::{LocalOptions, LocalSession};
use pitcrew::sandbox::{ExecRequest, Session};

const IMAGE: &str = "pitcrew-test-busybox:1";
const BUSYBOX: &str = "/bin/busybox";
const CALLS: usize = 200;
const WARMUP: usize = 20;
const LIFECYCLES: usize = 10;

type Error = Box<dyn std::error::Error>;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn report(what: &str, mut times: Vec<Duration>) {
    times.sort();
    println!(
        "{what:<40} median {:>8.3} ms   p90 {:>8.3} ms   min {:>8.3} ms   max {:>8.3} ms   (n = {})",
        ms(percentile(&times, 0.5)),
        ms(percentile(&times, 0.9)),
        ms(times[0]),
        ms(times[times.len() - 1]),
        times.len()
    );
}

/// The wall time of each of `CALLS` runs of `true` (after a warm-up), as the caller sees it.
async fn time_calls<F, Fut>(mut call: F) -> Result<Vec<Duration>, Error>
where
    F: FnMut(ExecRequest) -> Fut,
    Fut: Future<Output = Result<pitcrew::sandbox::ExecOutput, pitcrew::sandbox::SandboxError>>,
{
    let mut times = Vec::with_capacity(CALLS);
    for i in 0..WARMUP + CALLS {
        let request = ExecRequest::new("true", Duration::from_secs(10));
        let started = Instant::now();
        let output = call(request).await?;
        let took = started.elapsed();
        if output.exit_code != Some(0) {
            return Err(format!("`true` failed: {output:?}").into());
        }
        if i >= WARMUP {
            times.push(took);
        }
    }
    Ok(times)
}

/// Builds the test image unless it exists.
async fn ensure_image(sandbox: &DockerSandbox) -> Result<(), Error> {
    let docker = sandbox.client();
    if docker.inspect_image(IMAGE).await.is_ok() {
        return Ok(());
    }
    let mut tar = tar::Builder::new(Vec::new());
    let dockerfile =
        b"FROM scratch\nCOPY busybox /bin/busybox\nRUN [\"/bin/busybox\", \"--install\", \"-s\", \"/bin\"]\n";
    let mut header = tar::Header::new_gnu();
    header.set_size(dockerfile.len() as u64);
    header.set_mode(0o644);
    header.set_cksum();
    tar.append_data(&mut header, "Dockerfile", &dockerfile[..])?;
    tar.append_path_with_name(BUSYBOX, "busybox")?;
    let context = tar.into_inner()?;
    let options = BuildImageOptionsBuilder::default().t(IMAGE).rm(true).build();
    let mut build = docker.build_image(options, None, Some(bollard::body_full(context.into())));
    while let Some(step) = build.next().await {
        if let Some(error) = step?.error_detail {
            return Err(format!("building {IMAGE}: {error:?}").into());
        }
    }
    Ok(())
}

fn main() -> Result<(), Error> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let sandbox = match DockerSandbox::connect().await {
            Ok(sandbox) if std::path::Path::new(BUSYBOX).exists() => sandbox,
            Ok(_) => {
                eprintln!("skipped: {BUSYBOX} is missing (apt-get install busybox-static)");
                return Ok(());
            }
            Err(err) => {
                eprintln!("skipped: {err}");
                return Ok(());
            }
        };
        ensure_image(&sandbox).await?;
        let workspace = tempfile::tempdir()?;
        std::fs::create_dir(workspace.path().join(".git"))?;
        let job = |name: &str| format!("bench-{name}-{}", std::process::id());

        println!("per-command overhead of `true` ({CALLS} calls after {WARMUP} warm-up calls):");
        let session = sandbox
            .start(DockerSpec::new(job("exec"), IMAGE, workspace.path()))
            .await?;
        let persistent = time_calls(|request| session.exec(request)).await;
        let per_command = time_calls(|request| session.exec_per_command(request)).await;
        // A file tool between two commands: the container is frozen for it, and the command thaws it.
        let frozen = time_calls(|request| async {
            session.quiesce().await?;
            session.exec(request).await
        })
        .await;
        session.stop().await?;
        report("docker, persistent shell session", persistent?);
        report("docker, one `docker exec` per command", per_command?);
        report("docker, freeze + thaw + command", frozen?);

        let local = LocalSession::start(workspace.path(), LocalOptions::default())?;
        let local_times = time_calls(|request| local.exec(request)).await;
        local.stop().await?;
        report("local process", local_times?);

        println!("\ncontainer life cycle ({LIFECYCLES} times):");
        let (mut starts, mut stops, mut totals) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..LIFECYCLES {
            let began = Instant::now();
            let session = sandbox
                .start(DockerSpec::new(job(&format!("life-{i}")), IMAGE, workspace.path()))
                .await?;
            let started = began.elapsed();
            session.stop().await?;
            starts.push(started);
            totals.push(began.elapsed());
            stops.push(began.elapsed() - started);
        }
        report("start (create, start, shell ready)", starts);
        report("stop (remove, forced)", stops);
        report("start + stop", totals);
        Ok(())
    })
}
