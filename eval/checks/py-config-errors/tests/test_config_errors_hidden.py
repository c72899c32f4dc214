import json

import pytest

from deploycfg import ConfigError, load_config, parse_config
from deploycfg.cli import main


def test_missing_file_is_a_config_error(tmp_path):
    missing = tmp_path / "missing.json"
    with pytest.raises(ConfigError, match="missing.json"):
        load_config(missing)


def test_invalid_json_is_a_config_error(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"host": "web", ', encoding="utf-8")
    with pytest.raises(ConfigError, match="broken.json"):
        load_config(path)


def test_missing_host_is_a_config_error(tmp_path):
    path = tmp_path / "nohost.json"
    path.write_text(json.dumps({"port": 8080}), encoding="utf-8")
    with pytest.raises(ConfigError, match="host"):
        load_config(path)


def test_non_numeric_port_is_a_config_error():
    with pytest.raises(ConfigError, match="port"):
        parse_config({"host": "web", "port": "http"})


def test_non_object_file_is_a_config_error(tmp_path):
    path = tmp_path / "list.json"
    path.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(ConfigError):
        load_config(path)


def test_cli_reports_missing_file(tmp_path, capsys):
    assert main(["check", str(tmp_path / "missing.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ")
    assert "missing.json" in err
