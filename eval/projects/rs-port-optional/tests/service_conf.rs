use svcconf::{bind_address, Config};

#[test]
fn configured_address() {
    let config = Config::parse("host = 10.0.0.5\nport = 9200\n").unwrap();
    assert_eq!(bind_address(&config), "10.0.0.5:9200");
}
