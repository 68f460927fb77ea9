"""tuner/study/storage/proxy_auth.py: a real `tuner storage-proxy` on 127.0.0.1 that takes a token
and TLS from the environment, and the workers' client that sends them."""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Iterator
from pathlib import Path

import optuna
import pytest
from conftest import free_port

from tuner.errors import ConfigError
from tuner.study.experiment.load import Heartbeat
from tuner.study.storage import proxy_auth
from tuner.study.storage.open import open_storage
from tuner.study.storage.proxy_server import start_proxy

pytest.importorskip("grpc", reason="the grpc extra is not installed")

BEAT = Heartbeat(interval_s=1, grace_s=2, max_retry=1)
TOKEN = "s3cret-token"


@pytest.fixture
def guarded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A proxy that wants TOKEN (given to it in a file, as a mounted Secret); yields its URL, the environment cleared."""
    (tmp_path / "token").write_text(TOKEN + "\n")
    monkeypatch.setenv(proxy_auth.TOKEN_FILE_ENV, str(tmp_path / "token"))
    port = free_port()
    server = start_proxy(f"sqlite:///{tmp_path / 'served.db'}", BEAT, "e.yaml", "127.0.0.1", port, threads=2)
    monkeypatch.delenv(proxy_auth.TOKEN_FILE_ENV)
    try:
        yield f"grpc://127.0.0.1:{port}"
    finally:
        server.stop(0).wait()


def test_a_call_without_the_token_is_refused_in_one_line_on_both_sides(
    guarded: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ConfigError) as refused:
        open_storage(guarded, BEAT, "e.yaml")
    assert "proxy refused: no token or a wrong one (TUNER_PROXY_TOKEN)" in str(refused.value) and TOKEN not in str(refused.value)
    monkeypatch.setenv(proxy_auth.TOKEN_ENV, "bad-guess")
    with pytest.raises(ConfigError):
        open_storage(guarded, BEAT, "e.yaml")
    server_said = capsys.readouterr().err.strip().splitlines()
    assert len(server_said) == 1 and server_said[0].startswith("tuner storage-proxy: refused calls from ipv4:127.0.0.1"), server_said
    assert "bad-guess" not in server_said[0]


def test_a_call_with_the_token_is_served(guarded: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(proxy_auth.TOKEN_ENV, TOKEN)
    study = optuna.create_study(study_name="ok", storage=open_storage(guarded, BEAT, "e.yaml"))
    study.optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=2)
    assert len(study.trials) == 2
    # Commands that only read (tuner best, report, doctor) send it too.
    from tuner.study.storage.open import optuna_storage

    assert len(optuna.load_study(study_name="ok", storage=optuna_storage(guarded, "e.yaml")).trials) == 2


def test_an_empty_token_file_is_refused_before_anything_is_served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "empty").write_text("\n")
    monkeypatch.setenv(proxy_auth.TOKEN_FILE_ENV, str(tmp_path / "empty"))
    with pytest.raises(ConfigError, match="TUNER_PROXY_TOKEN_FILE: expected a token of at least one character"):
        start_proxy(f"sqlite:///{tmp_path / 'served.db'}", BEAT, "e.yaml", "127.0.0.1", free_port(), threads=2)
    assert not (tmp_path / "served.db").exists()


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for localhost and 127.0.0.1, and its key (PEM files)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    names = x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(names, critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    (folder / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    plain = serialization.NoEncryption()
    (folder / "key.pem").write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, plain))
    return folder / "cert.pem", folder / "key.pem"


def test_tls_and_the_token_together(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("cryptography", reason="cryptography (installed with MLflow) makes the test's certificate")
    cert, key = self_signed(tmp_path)
    monkeypatch.setenv(proxy_auth.TLS_CERT_ENV, str(cert))
    monkeypatch.setenv(proxy_auth.TLS_KEY_ENV, str(key))
    monkeypatch.setenv(proxy_auth.TOKEN_ENV, TOKEN)
    port = free_port()
    server = start_proxy(f"sqlite:///{tmp_path / 'served.db'}", BEAT, "e.yaml", "127.0.0.1", port, threads=2)
    try:
        monkeypatch.setenv(proxy_auth.TLS_CA_ENV, str(cert))
        study = optuna.create_study(study_name="tls", storage=open_storage(f"grpc://localhost:{port}", BEAT, "e.yaml"))
        study.optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=1)
        assert len(study.trials) == 1
        monkeypatch.delenv(proxy_auth.TLS_CA_ENV)  # plain gRPC to a TLS port: no answer, one line
        with pytest.raises(ConfigError, match="no storage proxy answers"):
            open_storage(f"grpc://localhost:{port}", BEAT, "e.yaml")
    finally:
        server.stop(0).wait()
