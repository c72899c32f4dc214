use svcconf::{bind_address, describe, Config, DEFAULT_PORT};

#[test]
fn missing_port_uses_the_default() {
    let config = Config::parse("host = 0.0.0.0\n").unwrap();
    assert_eq!(bind_address(&config), format!("0.0.0.0:{DEFAULT_PORT}"));
    assert_eq!(bind_address(&config), "0.0.0.0:8080");
}

#[test]
fn missing_port_ipv6() {
    let config = Config::parse("host = ::\n").unwrap();
    assert_eq!(bind_address(&config), "[::]:8080");
}

#[test]
fn describe_without_port() {
    let config = Config::parse("workers = 1\n").unwrap();
    assert_eq!(
        describe(&config),
        "listening on 127.0.0.1:8080 (port 8080) with 1 worker"
    );
}

#[test]
fn explicit_port_wins() {
    let config = Config::parse("host = 10.0.0.5\nport = 9200\n").unwrap();
    assert_eq!(bind_address(&config), "10.0.0.5:9200");
}
