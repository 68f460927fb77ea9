"""Who may call `tuner storage-proxy`: TLS and a shared token, both from the environment.

The token is never a flag (a command line is readable by every user of the machine, in
``ps``): it is ``$TUNER_PROXY_TOKEN``, or the first line of the file ``$TUNER_PROXY_TOKEN_FILE``
names (a mounted Kubernetes Secret). The proxy, given one, refuses every call that does not
carry it (gRPC status UNAUTHENTICATED, one line on each side); a worker, given one, sends it
with every call as ``authorization: Bearer TOKEN`` metadata. TLS: the proxy serves it with
``$TUNER_PROXY_TLS_CERT`` and ``$TUNER_PROXY_TLS_KEY`` (PEM files); a client that has
``$TUNER_PROXY_TLS_CA`` (the certificate, or its CA, to trust) connects with it. Send a token
over TLS anywhere but a private network: in plain gRPC it crosses the wire as written.
"""

from __future__ import annotations

import hmac
import os
import sys
from pathlib import Path
from typing import Any

from tuner.errors import ConfigError

TOKEN_ENV = "TUNER_PROXY_TOKEN"
TOKEN_FILE_ENV = "TUNER_PROXY_TOKEN_FILE"
TLS_CERT_ENV = "TUNER_PROXY_TLS_CERT"
TLS_KEY_ENV = "TUNER_PROXY_TLS_KEY"
TLS_CA_ENV = "TUNER_PROXY_TLS_CA"
METADATA_KEY = "authorization"
REFUSED = f"proxy refused: no token or a wrong one ({TOKEN_ENV})"
# Found again quickly once a proxy is back: gRPC's default backoff between reconnects grows to 120 s.
CHANNEL_OPTIONS = [
    ("grpc.max_receive_message_length", -1),  # as Optuna's own channel
    ("grpc.initial_reconnect_backoff_ms", 250),
    ("grpc.min_reconnect_backoff_ms", 250),
    ("grpc.max_reconnect_backoff_ms", 2000),
]


def _read(env: str, what: str) -> bytes | None:
    path = os.environ.get(env)
    if not path:
        return None
    try:
        return Path(path).read_bytes()
    except OSError as err:
        raise ConfigError("environment", env, f"a readable file holding {what}", f"{path} ({err.strerror})") from None


def token() -> str | None:
    """The shared token from the environment (``$TUNER_PROXY_TOKEN``, else the file ``$TUNER_PROXY_TOKEN_FILE`` names); None: no token."""
    value = os.environ.get(TOKEN_ENV)
    source = TOKEN_ENV
    if not value:
        data = _read(TOKEN_FILE_ENV, "the storage proxy's token")
        if data is None:
            return None
        value, source = (data.decode(errors="replace").splitlines() or [""])[0], TOKEN_FILE_ENV
    value = value.strip()
    if not value:
        raise ConfigError("environment", source, "a token of at least one character", "an empty one")
    return value


def channel(grpc: Any, host: str, port: int) -> tuple[Any, Any]:
    """(the raw channel, the channel to call on): TLS with ``$TUNER_PROXY_TLS_CA``, the token with every call when one is set."""
    target = f"{host}:{port}"
    ca = _read(TLS_CA_ENV, "the certificate to trust (PEM)")
    raw = (
        grpc.secure_channel(target, grpc.ssl_channel_credentials(root_certificates=ca), options=CHANNEL_OPTIONS)
        if ca is not None
        else grpc.insecure_channel(target, options=CHANNEL_OPTIONS)
    )
    secret = token()
    if secret is None:
        return raw, raw

    class WithToken(grpc.UnaryUnaryClientInterceptor):
        def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
            metadata = [*(details.metadata or []), (METADATA_KEY, f"Bearer {secret}")]
            return continuation(details._replace(metadata=metadata), request)

    return raw, grpc.intercept_channel(raw, WithToken())


def server_credentials(grpc: Any) -> Any:
    """The proxy's TLS credentials from ``$TUNER_PROXY_TLS_CERT`` and ``$TUNER_PROXY_TLS_KEY``; None: plain gRPC."""
    cert = _read(TLS_CERT_ENV, "the proxy's certificate (PEM)")
    key = _read(TLS_KEY_ENV, "the proxy's private key (PEM)")
    if cert is None and key is None:
        return None
    if cert is None or key is None:
        missing = TLS_CERT_ENV if cert is None else TLS_KEY_ENV
        raise ConfigError("environment", missing, f"set as well ({TLS_CERT_ENV} and {TLS_KEY_ENV} go together)", None)
    return grpc.ssl_server_credentials([(key, cert)])


def guard(grpc: Any, secret: str | None, lost: type[BaseException]) -> Any:
    """The proxy's server interceptor: calls without ``secret`` are refused (UNAUTHENTICATED, one line
    here per caller), and a call its storage could not serve past ``heartbeat.retry_s`` (``lost``)
    answers UNAVAILABLE, which a worker waits out, instead of gRPC's error and traceback."""
    expected = f"Bearer {secret}".encode() if secret is not None else None
    told: set[str] = set()

    def refuse(request: Any, context: Any) -> Any:
        caller = context.peer().rsplit(":", 1)[0]
        if caller not in told:
            told.add(caller)
            print(f"tuner storage-proxy: refused calls from {caller}: no token or a wrong one ({TOKEN_ENV})", file=sys.stderr, flush=True)
        context.abort(grpc.StatusCode.UNAUTHENTICATED, REFUSED)

    class Guard(grpc.ServerInterceptor):
        def intercept_service(self, continuation: Any, details: Any) -> Any:
            handler = continuation(details)
            if handler is None or handler.unary_unary is None:
                return handler
            if expected is not None:
                sent = dict(details.invocation_metadata or ()).get(METADATA_KEY, "")
                if not hmac.compare_digest(sent.encode(), expected):
                    return handler._replace(unary_unary=refuse)
            serve = handler.unary_unary

            def served(request: Any, context: Any) -> Any:
                try:
                    return serve(request, context)
                except lost as err:
                    context.abort(grpc.StatusCode.UNAVAILABLE, str(err))

            return handler._replace(unary_unary=served)

    return Guard()
