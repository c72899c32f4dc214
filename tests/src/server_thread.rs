//! An axum app served on 127.0.0.1 from a thread and runtime of its own, so that the fake servers
//! work for tests on paused time and for sync code alike. Dropping the handle stops the server:
//! in-flight responses get a short grace period, then whatever is left (a stalled stream) is dropped.

use std::future::IntoFuture;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::thread::JoinHandle;
use std::time::Duration;

use axum::Router;
use tokio::sync::watch;

/// How long in-flight responses may run on after shutdown before they are dropped.
const SHUTDOWN_GRACE: Duration = Duration::from_millis(100);

#[derive(Debug)]
pub struct ServerThread {
    addr: SocketAddr,
    shutdown: watch::Sender<bool>,
    thread: Option<JoinHandle<()>>,
}

impl ServerThread {
    /// Binds 127.0.0.1:0 and serves `app` on a thread named `name-PORT`, with a current-thread
    /// runtime (`workers` 0) or a multi-thread one with that many workers.
    pub fn start(name: &str, app: Router, workers: usize) -> io::Result<ServerThread> {
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let runtime = if workers == 0 {
            tokio::runtime::Builder::new_current_thread().enable_all().build()?
        } else {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(workers)
                .enable_all()
                .build()?
        };
        let (shutdown, stop) = watch::channel(false);
        let thread = std::thread::Builder::new()
            .name(format!("{name}-{}", addr.port()))
            .spawn(move || serve(runtime, listener, app, stop))?;
        Ok(ServerThread {
            addr,
            shutdown,
            thread: Some(thread),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for ServerThread {
    fn drop(&mut self) {
        self.shutdown.send_replace(true);
        if let Some(thread) = self.thread.take() {
            // The server thread ends within SHUTDOWN_GRACE; a panic in it has nothing to add.
            let _ = thread.join();
        }
    }
}

fn serve(runtime: tokio::runtime::Runtime, listener: std::net::TcpListener, app: Router, stop: watch::Receiver<bool>) {
    runtime.block_on(async move {
        let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
            return;
        };
        let mut graceful_stop = stop.clone();
        let server = axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                // An error means the handle is gone: stop too.
                let _ = graceful_stop.wait_for(|stop| *stop).await;
            })
            .into_future();
        let mut hard_stop = stop;
        let deadline = async move {
            let _ = hard_stop.wait_for(|stop| *stop).await;
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        };
        tokio::select! {
            _ = server => {}
            () = deadline => {}
        }
    });
    runtime.shutdown_timeout(Duration::from_millis(100));
}
