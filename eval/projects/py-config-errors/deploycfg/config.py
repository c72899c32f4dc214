"""The deployment file: reading, defaults and validation."""

import json
from dataclasses import dataclass
from pathlib import Path

DEFAULTS = {"port": 443, "retries": 2, "timeout": 30.0}


class ConfigError(Exception):
    """A deployment file that cannot be used; the message says why."""


@dataclass(frozen=True)
class Config:
    host: str
    port: int
    retries: int
    timeout: float


def load_config(path) -> Config:
    """Reads and validates the deployment file at `path`."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    return parse_config(json.loads(text), source=str(path))


def parse_config(raw: dict, source: str = "<config>") -> Config:
    """Validates an already-decoded deployment file."""
    values = {**DEFAULTS, **raw}
    host = values["host"]
    if not isinstance(host, str) or not host.strip():
        raise ConfigError(f"{source}: host must be a non-empty string")
    port = int(values["port"])
    if not 1 <= port <= 65535:
        raise ConfigError(f"{source}: port {port} is out of range (1-65535)")
    retries = int(values["retries"])
    if retries < 0:
        raise ConfigError(f"{source}: retries must not be negative")
    timeout = float(values["timeout"])
    if timeout <= 0:
        raise ConfigError(f"{source}: timeout must be positive")
    return Config(host=host.strip(), port=port, retries=retries, timeout=timeout)
