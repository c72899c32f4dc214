import json

from deploycfg.cli import main


def test_check_ok(tmp_path, capsys):
    path = tmp_path / "deploy.json"
    path.write_text(json.dumps({"host": "web", "port": 8080}), encoding="utf-8")
    assert main(["check", str(path)]) == 0
    assert capsys.readouterr().out.strip() == "ok: web:8080 (2 retries, timeout 30.0s)"


def test_check_invalid_value(tmp_path, capsys):
    path = tmp_path / "deploy.json"
    path.write_text(json.dumps({"host": "web", "port": 0}), encoding="utf-8")
    assert main(["check", str(path)]) == 2
    assert "error:" in capsys.readouterr().err
