import json

import pytest

from deploycfg import Config, ConfigError, load_config, parse_config


def write(tmp_path, data):
    path = tmp_path / "deploy.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_full_file(tmp_path):
    path = write(tmp_path, {"host": "app-1.internal", "port": 8443, "retries": 3, "timeout": 12.5})
    assert load_config(path) == Config(host="app-1.internal", port=8443, retries=3, timeout=12.5)


def test_defaults(tmp_path):
    assert load_config(write(tmp_path, {"host": "db"})) == Config(host="db", port=443, retries=2, timeout=30.0)


def test_port_out_of_range():
    with pytest.raises(ConfigError, match="out of range"):
        parse_config({"host": "db", "port": 70000})


def test_blank_host():
    with pytest.raises(ConfigError, match="host"):
        parse_config({"host": "  "})


def test_negative_retries():
    with pytest.raises(ConfigError, match="retries"):
        parse_config({"host": "db", "retries": -1})
