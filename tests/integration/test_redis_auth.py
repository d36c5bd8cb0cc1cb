"""An operator's own Redis, locked as docs/operations.md says (issue 39):
laurels works with a Redis ACL user and password, and over TLS
(`rediss://`), and the default user switched off. Each test starts its own
redis-server (the machine's, 7.0) on a free loopback port."""

from __future__ import annotations

import contextlib
import datetime as dt
import ipaddress
import shutil
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import redis
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from laurels.core.seasons import parse_season
from laurels.process.settings import Secrets
from laurels.runtime import Runtime
from tests.helpers import ADMIN, INGEST, USER_SECRET, free_port, make_settings

pytestmark = [pytest.mark.skipif(shutil.which("redis-server") is None,
                                reason="needs the machine's redis-server to start one"),
              pytest.mark.once]
ACL = "user default off\nuser laurels on >s3cret-pw ~* &* +@all\n"


def _cert(name: str, key: ec.EllipticCurvePrivateKey, issuer: x509.Name,
          signer: ec.EllipticCurvePrivateKey, ca: bool) -> x509.Certificate:
    now = dt.datetime.now(dt.UTC)
    builder = (x509.CertificateBuilder()
               .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
               .issuer_name(issuer).public_key(key.public_key())
               .serial_number(x509.random_serial_number())
               # Valid on the machine's clock (redis-server's and OpenSSL's)
               # whatever the suite's says: it may run a year ahead.
               .not_valid_before(now - dt.timedelta(days=800))
               .not_valid_after(now + dt.timedelta(days=800))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if not ca:
        builder = builder.add_extension(x509.SubjectAlternativeName(
            [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
    return builder.sign(signer, hashes.SHA256())


def tls_files(folder: Path) -> dict[str, Path]:
    """A CA and a server certificate for 127.0.0.1, as files redis-server reads."""
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(
        ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "laurels test CA")])
    ca = _cert("laurels test CA", ca_key, ca_name, ca_key, ca=True)
    cert = _cert("127.0.0.1", key, ca_name, ca_key, ca=False)
    pem = serialization.Encoding.PEM
    files = {"ca": folder / "ca.pem", "cert": folder / "server.pem", "key": folder / "key.pem"}
    files["ca"].write_bytes(ca.public_bytes(pem))
    files["cert"].write_bytes(cert.public_bytes(pem))
    files["key"].write_bytes(key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption()))
    return files


@contextlib.contextmanager
def start_redis(folder: Path, conf: str, probe: str) -> Iterator[None]:
    path = folder / "redis.conf"
    path.write_text(conf + f'save ""\nappendonly no\ndir {folder}\n')
    proc = subprocess.Popen(["redis-server", str(path)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                redis.Redis.from_url(probe, socket_connect_timeout=1).ping()
                break
            except redis.RedisError:
                assert time.monotonic() < deadline and proc.poll() is None, "no redis-server"
                time.sleep(0.05)
        yield
    finally:
        proc.kill()
        proc.wait(10)


@pytest.fixture
def acl_url(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    url = f"redis://laurels:s3cret-pw@127.0.0.1:{port}/0"
    with start_redis(tmp_path, f"port {port}\nbind 127.0.0.1\n" + ACL, url):
        yield url


@pytest.fixture
def tls_url(tmp_path: Path) -> Iterator[str]:
    port, files = free_port(), tls_files(tmp_path)
    conf = (f"port 0\ntls-port {port}\nbind 127.0.0.1\ntls-cert-file {files['cert']}\n"
            f"tls-key-file {files['key']}\ntls-ca-cert-file {files['ca']}\n"
            "tls-auth-clients no\n" + ACL)
    url = f"rediss://laurels:s3cret-pw@127.0.0.1:{port}/0?ssl_ca_certs={files['ca']}"
    with start_redis(tmp_path, conf, url):
        yield url


async def a_week_of_work(tmp_path: Path, database_url: str, redis_url: str) -> None:
    """Completions recorded and applied (Lua), read, rebuilt and verified,
    a hint published, on this Redis."""
    settings = make_settings(tmp_path, database_url, redis_url, "acl", redis_cluster=False)
    rt = Runtime(settings, Secrets(INGEST, ADMIN, USER_SECRET), database_url, redis_url)
    await rt.open(run_migrations=False)
    try:
        svc = rt.derive(clock=lambda: datetime(2026, 12, 2, 12, tzinfo=UTC))
        w49 = parse_season("2026-W49", zone="UTC")
        await svc.rebuilder.run(w49)
        items = [{"completion_id": f"r{u}", "user_id": u, "points": u,
                  "completed_at": "2026-12-01T10:00:00Z"} for u in (1, 2, 3)]
        assert {o.status for o in await svc.ingestor.record(items)} == {"recorded"}
        top = await svc.reads.top(w49, 10)
        assert [(e["user_id"], e["score"]) for e in top["entries"]] == [(3, 3), (2, 2), (1, 1)]
        await svc.rebuilder.run(w49)
        assert (await svc.verifier.verify(w49)).consistent
        await svc.board.publish_hint({"season": "2026-W49"})
    finally:
        await rt.close()


async def test_an_acl_user_with_a_password(tmp_path: Path, database_url: str,
                                           acl_url: str) -> None:
    with pytest.raises(redis.AuthenticationError):
        redis.Redis.from_url(acl_url.replace("laurels:s3cret-pw@", "")).ping()
    await a_week_of_work(tmp_path, database_url, acl_url)


async def test_tls_with_an_acl_user(tmp_path: Path, database_url: str, tls_url: str) -> None:
    plain = tls_url.replace("rediss://", "redis://").split("?")[0]
    with pytest.raises(redis.ConnectionError):
        redis.Redis.from_url(plain, socket_connect_timeout=2).ping()
    await a_week_of_work(tmp_path, database_url, tls_url)
