"""Mutual TLS: ``serve --tls-client-ca`` requires a client certificate from that authority and
refuses any other at the handshake; the clients present one with ``--tls-cert/--tls-key``.

The test makes its own authorities and certificates (the ``cryptography`` package).
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from planner_svc.api.planner.v1 import plan_pb2_grpc
from planner_svc.cli import main
from planner_svc.client.common import question_request
from planner_svc.client.connection import ClientTLS, open_channel
from planner_svc.core.errors import ConfigError
from planner_svc.settings import ServerSettings, TransportSettings
from tests.integration.conftest import Live, start

pytestmark = pytest.mark.integration

QUESTION = "Which port is the world's busiest by cargo tonnage?"


@dataclass(frozen=True)
class Issued:
    """A PEM key and certificate written to files."""

    key: Path
    cert: Path


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _write(folder: Path, stem: str, key: ec.EllipticCurvePrivateKey,
           cert: x509.Certificate) -> Issued:
    key_path, cert_path = folder / f"{stem}.key", folder / f"{stem}.pem"
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return Issued(key=key_path, cert=cert_path)


class Authority:
    """A self-signed certificate authority that issues server and client certificates."""

    def __init__(self, folder: Path, name: str) -> None:
        self.folder = folder
        self.key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        self.cert = (
            x509.CertificateBuilder()
            .subject_name(_name(name)).issuer_name(_name(name))
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(
                digital_signature=True, key_cert_sign=True, crl_sign=True,
                content_commitment=False, key_encipherment=False, data_encipherment=False,
                key_agreement=False, encipher_only=False, decipher_only=False,
            ), critical=True)
            .sign(self.key, hashes.SHA256())
        )
        self.pem = folder / f"{name}-ca.pem"
        self.pem.write_bytes(self.cert.public_bytes(serialization.Encoding.PEM))

    def issue(self, stem: str, *, server: bool) -> Issued:
        """A certificate for ``localhost`` / 127.0.0.1 (server) or a client named ``stem``."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name("localhost" if server else stem))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH]
            ), critical=False)
        )
        if server:
            builder = builder.add_extension(x509.SubjectAlternativeName([
                x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
            ]), critical=False)
        return _write(self.folder, stem, key, builder.sign(self.key, hashes.SHA256()))


@dataclass(frozen=True)
class Pki:
    trusted: Authority
    server: Issued
    client: Issued
    stranger: Issued


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    folder = tmp_path_factory.mktemp("pki")
    trusted = Authority(folder, "trusted")
    other = Authority(folder, "other")
    return Pki(trusted=trusted, server=trusted.issue("server", server=True),
               client=trusted.issue("client", server=False),
               stranger=other.issue("stranger", server=False))


@pytest.fixture(scope="module")
def mtls_server(fixture_data_dir: Path, pki: Pki) -> Iterator[Live]:
    live = start(ServerSettings(data_dir=fixture_data_dir, transport=TransportSettings(
        port=0, max_workers=2, tls_cert=pki.server.cert, tls_key=pki.server.key,
        tls_client_ca=pki.trusted.pem,
    )))
    yield live
    live.channel.close()
    live.running.stop(0)


def _plan(address: str, tls: ClientTLS) -> grpc.StatusCode:
    with open_channel(address, tls) as channel:
        try:
            plan_pb2_grpc.EvidencePlannerServiceStub(channel).Plan(
                question_request(QUESTION, budget_tokens=300), timeout=10)
        except grpc.RpcError as err:
            return err.code()  # type: ignore[attr-defined,no-any-return]
    return grpc.StatusCode.OK


def test_a_client_certificate_from_the_authority_is_required(
    mtls_server: Live, pki: Pki
) -> None:
    address = f"localhost:{mtls_server.running.port}"
    ca = pki.trusted.pem
    assert _plan(address, ClientTLS(ca=ca, cert=pki.client.cert, key=pki.client.key)) == (
        grpc.StatusCode.OK
    )
    # Refused at the handshake: no certificate, or one another authority issued.
    assert _plan(address, ClientTLS(ca=ca)) == grpc.StatusCode.UNAVAILABLE
    assert _plan(address, ClientTLS(ca=ca, cert=pki.stranger.cert, key=pki.stranger.key)) == (
        grpc.StatusCode.UNAVAILABLE
    )
    with grpc.insecure_channel(address) as plaintext, pytest.raises(grpc.RpcError) as caught:
        plan_pb2_grpc.EvidencePlannerServiceStub(plaintext).Plan(
            question_request(QUESTION), timeout=10)
    assert caught.value.code() == grpc.StatusCode.UNAVAILABLE  # type: ignore[attr-defined]


def test_the_clis_present_their_certificate(
    mtls_server: Live, pki: Pki, capsys: pytest.CaptureFixture[str]
) -> None:
    address = f"localhost:{mtls_server.running.port}"
    tls = ["--tls-ca", str(pki.trusted.pem), "--tls-cert", str(pki.client.cert),
           "--tls-key", str(pki.client.key)]
    assert main(["plan", QUESTION, "--address", address, "--budget", "300", *tls]) == 0
    assert "plan b3:" in capsys.readouterr().out
    assert main(["research", QUESTION, "--address", address, "--budget", "300",
                 "--max-depth", "-1", *tls]) == 0
    assert "stopped: STOP_REASON_DEPTH_CAP" in capsys.readouterr().out
    assert main(["plan", QUESTION, "--address", address, "--tls-ca", str(pki.trusted.pem),
                 "--timeout", "10"]) == 3  # UNAVAILABLE: no answer without a certificate
    refusal = _cli_lines(capsys.readouterr().err)
    assert len(refusal) == 1 and refusal[0].startswith("planner-svc plan: UNAVAILABLE: ")
    assert main(["plan", QUESTION, "--address", address, "--tls-cert", str(pki.client.cert)]) == 2
    assert _cli_lines(capsys.readouterr().err) == [  # the server's log lines may land here too
        "planner-svc plan: --tls-cert and --tls-key must be given together"
    ]
    missing = pki.trusted.pem.parent / "absent.pem"
    assert main(["research", QUESTION, "--address", address, "--tls-ca", str(missing)]) == 2
    assert _cli_lines(capsys.readouterr().err) == [
        f"planner-svc research: cannot read --tls-ca {missing}: No such file or directory"
    ]


def _cli_lines(err: str) -> list[str]:
    """The command's own lines of captured stderr: the in-process server logs to the same
    stream, and a research stream's end is logged after its client has returned."""
    return [line for line in err.splitlines() if line.startswith("planner-svc ")]


def test_client_authorities_need_tls() -> None:
    with pytest.raises(ConfigError) as caught:
        TransportSettings(tls_client_ca=Path("ca.pem"))
    assert (caught.value.field, caught.value.reason) == (
        "tls_client_ca", "client certificates need TLS: give tls_cert and tls_key too"
    )


def test_serve_names_an_unreadable_authority_file(
    pki: Pki, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "absent-ca.pem"
    code = main(["serve", "--data", str(tmp_path / "data"), "--port", "0", "--tls-cert",
                 str(pki.server.cert), "--tls-key", str(pki.server.key), "--tls-client-ca",
                 str(missing)])
    assert code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"planner-svc serve: invalid setting tls_client_ca: cannot read {missing}: "
        "No such file or directory"
    )
