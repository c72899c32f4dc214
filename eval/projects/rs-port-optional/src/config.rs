use std::fmt;

/// The port used when the configuration names none.
pub const DEFAULT_PORT: u16 = 8080;

/// The service's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub host: String,
    /// `None` when the file leaves it out: the service listens on [`DEFAULT_PORT`].
    pub port: Option<u16>,
    pub workers: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            host: "127.0.0.1".to_owned(),
            port: None,
            workers: 2,
        }
    }
}

/// A line of the file that could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for ConfigError {}

impl Config {
    /// Parses `key = value` lines; blank lines and `#` comments are skipped.
    pub fn parse(text: &str) -> Result<Config, ConfigError> {
        let mut config = Config::default();
        for (index, line) in text.lines().enumerate() {
            let error = |message: String| ConfigError {
                line: index + 1,
                message,
            };
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (key, value) = line
                .split_once('=')
                .ok_or_else(|| error(format!("expected `key = value`, found {line:?}")))?;
            let (key, value) = (key.trim(), value.trim());
            match key {
                "host" => config.host = value.to_owned(),
                "port" => {
                    let port = value
                        .parse::<u16>()
                        .ok()
                        .filter(|&p| p != 0)
                        .ok_or_else(|| error(format!("invalid port {value:?}")))?;
                    config.port = Some(port);
                }
                "workers" => {
                    config.workers = value
                        .parse()
                        .map_err(|_| error(format!("invalid worker count {value:?}")))?;
                }
                other => return Err(error(format!("unknown key {other:?}"))),
            }
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_all_keys() {
        let config =
            Config::parse("# status\nhost = 0.0.0.0\nport = 9100\n\nworkers = 4\n").unwrap();
        assert_eq!(
            config,
            Config {
                host: "0.0.0.0".into(),
                port: Some(9100),
                workers: 4
            }
        );
    }

    #[test]
    fn port_may_be_left_out() {
        assert_eq!(Config::parse("host = ::1").unwrap().port, None);
    }

    #[test]
    fn bad_lines_name_their_line() {
        let err = Config::parse("host = a\nport = http\n").unwrap_err();
        assert_eq!(err.to_string(), "line 2: invalid port \"http\"");
        assert!(Config::parse("colour = blue").is_err());
    }
}
