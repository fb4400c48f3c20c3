"""ServerConfig and the command line that builds it: flags -> config, refusals as usage errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from heron.engine.api import DEFAULT_MODEL
from heron.engine.config import EngineConfig
from heron.server import cli
from heron.server.config import AuthMethod, ServerConfig, TlsConfig

REPO = Path(__file__).resolve().parents[2]


def _config(*flags: str) -> ServerConfig:
    return cli.server_config(cli.build_parser().parse_args(["serve", *flags]))


def test_no_flags_give_the_default_config() -> None:
    config = _config()
    assert config == ServerConfig()
    assert (config.host, config.port, config.data_dir) == ("127.0.0.1", 5433, Path("heron-data"))
    assert config.engine == EngineConfig(model=DEFAULT_MODEL, device="cpu")


def test_flags_fill_server_and_engine_config(tmp_path: Path) -> None:
    config = _config("--host", "0.0.0.0", "--port", "0", "--data-dir", str(tmp_path),
                     "--model", "/models/qwen3", "--device", "cuda:1", "--auth", "scram-sha-256")
    assert config == ServerConfig(host="0.0.0.0", port=0, data_dir=tmp_path,
                                  engine=EngineConfig(model="/models/qwen3", device="cuda:1"),
                                  auth=AuthMethod.SCRAM_SHA_256)
    assert _config().auth is AuthMethod.TRUST and _config().tls is None


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "localhost", "127.0.0.2"])
def test_trust_is_allowed_on_loopback(host: str) -> None:
    assert ServerConfig(host=host).auth is AuthMethod.TRUST


def test_tls_flags_build_a_tls_config(tls_files: tuple[Path, Path]) -> None:
    cert, key = tls_files
    config = _config("--tls-cert", str(cert), "--tls-key", str(key))
    assert config.tls == TlsConfig(cert, key)
    assert "BEGIN CERTIFICATE" in config.tls.certificate_pem()


@pytest.mark.parametrize("spelling", ["none", "None", "NONE"])
def test_model_none_means_no_engine(spelling: str) -> None:
    assert _config("--model", spelling).engine is None


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--port", "70000"], "port must be between 0 and 65535, got 70000"),
        (["--port", "-1"], "port must be between 0 and 65535, got -1"),
        (["--port", "http"], "argument --port: not a port number: 'http'"),
        (["--device", "gpu"], "device must be cpu, cuda or cuda:N, got 'gpu'"),
        # The device is checked even when no model will run on it.
        (["--model", "none", "--device", "cuda:x"], "device must be cpu, cuda or cuda:N"),
        (["--host", "0.0.0.0"], "trust authentication is only allowed on a loopback address"),
        (["--auth", "md5"], "argument --auth: invalid choice: 'md5'"),
        (["--tls-cert", "cert.pem"], "--tls-cert and --tls-key go together"),
        (["--tls-cert", "/nonexistent.pem", "--tls-key", "/nonexistent.key"],
         "TLS cert file /nonexistent.pem is not a readable file"),
    ],
)
def test_bad_flags_exit_with_usage_status_2(
    flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["serve", *flags])
    assert exited.value.code == 2
    error = capsys.readouterr().err
    assert "usage:" in error and message in error


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"port": 65536}, "port must be between 0 and 65535"),
        ({"port": True}, "port must be between 0 and 65535"),
        ({"host": ""}, "host must be an address to listen on"),
        ({"data_dir": "heron-data"}, "data_dir must be a pathlib.Path"),
        ({"engine": "smollm2-135m"}, "engine must be an EngineConfig or None"),
        ({"auth": "trust"}, "auth must be an AuthMethod"),
        ({"host": "0.0.0.0", "auth": AuthMethod.TRUST}, "only allowed on a loopback address"),
    ],
)
def test_server_config_rejects_bad_values(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ServerConfig(**fields)  # type: ignore[arg-type]


def test_a_key_that_does_not_match_the_certificate_is_refused(
        tls_files: tuple[Path, Path], tmp_path: Path) -> None:
    cert, _ = tls_files
    with pytest.raises(ValueError, match="cannot use TLS certificate"):
        TlsConfig(cert, cert)


def test_server_modules_do_not_import_torch() -> None:
    code = (
        "import sys, heron.server.cli, heron.server.config, heron.server.app\n"
        "from heron.server.cli import build_parser, server_config\n"
        "server_config(build_parser().parse_args(['serve', '--device', 'cuda']))\n"
        "assert 'torch' not in sys.modules, 'torch imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, timeout=60)
