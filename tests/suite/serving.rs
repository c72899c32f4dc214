//! Starting `pitcrew serve` for the suite: the real job handlers on a loopback port of its own,
//! configured by the test's [`ServerOverrides`] alone (no file, no environment).

use std::collections::BTreeMap;

use pitcrew::config::{Config, LoadOptions};
use pitcrew::serve::ServeOptions;
use pitcrew::server::RunningServer;
use pitcrew_tests::server_config::ServerOverrides;

/// The server, listening on 127.0.0.1 on a free port.
pub(crate) async fn serve(overrides: &ServerOverrides) -> RunningServer {
    let config = Config::load(LoadOptions {
        config_path: None,
        env: &BTreeMap::new(),
        overrides: &overrides.build(),
    })
    .unwrap_or_else(|errors| panic!("the test's configuration: {errors}"));
    pitcrew::serve::start(
        config,
        ServeOptions {
            listener: Some(std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("a port: {e}"))),
            ..ServeOptions::default()
        },
    )
    .await
    .unwrap_or_else(|e| panic!("pitcrew serve did not start: {e}"))
}
