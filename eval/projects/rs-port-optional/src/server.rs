use crate::config::Config;

/// The address the service binds, `host:port`; an IPv6 host is bracketed.
pub fn bind_address(config: &Config) -> String {
    if config.host.contains(':') {
        format!("[{}]:{}", config.host, config.port)
    } else {
        format!("{}:{}", config.host, config.port)
    }
}

/// The port the service listens on.
pub fn listen_port(config: &Config) -> u16 {
    config.port
}

/// The line the service logs when it starts.
pub fn describe(config: &Config) -> String {
    let workers = if config.workers == 1 {
        "worker"
    } else {
        "workers"
    };
    format!(
        "listening on {} (port {}) with {} {workers}",
        bind_address(config),
        listen_port(config),
        config.workers
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv6_hosts_are_bracketed() {
        let config = Config {
            host: "::1".into(),
            port: Some(9100),
            workers: 1,
        };
        assert_eq!(bind_address(&config), "[::1]:9100");
    }

    #[test]
    fn describe_mentions_workers() {
        let config = Config {
            host: "0.0.0.0".into(),
            port: Some(9100),
            workers: 4,
        };
        assert_eq!(
            describe(&config),
            "listening on 0.0.0.0:9100 (port 9100) with 4 workers"
        );
    }
}
