"""Deployment configuration loader."""

from .config import Config, ConfigError, load_config, parse_config

__all__ = ["Config", "ConfigError", "load_config", "parse_config"]
