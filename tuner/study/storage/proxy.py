"""A study's storage through `tuner storage-proxy` (Optuna's gRPC storage proxy): ``grpc://HOST:PORT``.

Optuna's proxy (``optuna.storages.run_grpc_proxy_server``) serves every read and write a
study makes (trials, parameters, user attributes, enqueued trials) over one gRPC server in
front of the database, so that hundreds of workers hold no database connection of their
own. It does not serve what tuner adds to the storage: the trial budget's admission
(tuner/study/storage/budget.py) and Optuna's heartbeats (which its client does not
implement). `tuner storage-proxy` (tuner/study/storage/proxy_server.py) serves both beside
Optuna's service, as a second gRPC service on the same port; this client calls it:

- a new or queued trial is admitted by the proxy's storage, in the same transaction as
  without a proxy, under the limit this worker sends with the call;
- heartbeats are recorded and stale trials found by the proxy's storage, with the heartbeat
  interval and grace period of the experiment the proxy was started with; this worker
  re-queues a stale trial it failed and closes its run, as without a proxy.

Commands that only read a study (`tuner best`, `report`, `doctor`, `sync`) need Optuna's own
service only; a worker refuses a plain Optuna proxy with one line.
"""

from __future__ import annotations

import json
import urllib.parse
import warnings
import weakref
from collections.abc import Sequence
from typing import Any

import optuna
from optuna.storages import GrpcStorageProxy
from optuna.storages._grpc.client import GrpcClientCache
from optuna.storages._heartbeat import BaseHeartbeat
from optuna.trial import TrialState

from tuner.study.storage import proxy_auth
from tuner.study.storage.budget import BudgetSpent, Limit, TrialAdmission
from tuner.study.storage.outage import Outage, waits_out_outages

SCHEME = "grpc://"
SERVICE = "tuner.StorageProxy"
METHODS = ("Hello", "CreateTrial", "TakeQueued", "RecordHeartbeat", "StaleTrials", "SetUserAttrs", "FinishedSearched")
CONNECT_TIMEOUT_S = 5
NEEDS_EXTRA = "the grpc extra is not installed (pip install 'tuner[grpc]', or bash scripts/setup.sh)"


class ProxyUnusable(ConnectionError):
    """The proxy cannot be used: not reachable, not tuner's, a malformed address, no grpcio."""


def is_proxy(url: str) -> bool:
    return url.startswith(SCHEME)


def proxy_address(url: str) -> tuple[str, int]:
    """(host, port) of ``grpc://HOST:PORT``; ProxyUnusable for anything else."""
    parts = urllib.parse.urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    if parts.scheme != "grpc" or not parts.hostname or port is None or parts.path not in ("", "/") or parts.query:
        raise ProxyUnusable("expected grpc://HOST:PORT")
    return parts.hostname, port


def encode(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode()


def decode(data: bytes) -> dict[str, Any]:
    return json.loads(data)


def limit_message(limit: Limit | None) -> dict[str, Any] | None:
    return None if limit is None else {"counted": limit.counted, "fresh": limit.fresh}


def limit_from(message: dict[str, Any] | None) -> Limit | None:
    return None if message is None else Limit(counted=message["counted"], fresh=message["fresh"])


def _grpc() -> Any:
    try:
        import grpc
    except ImportError:
        raise ProxyUnusable(NEEDS_EXTRA) from None
    return grpc


def reader(url: str) -> GrpcStorageProxy:
    """Optuna's own client, for commands that only read (any Optuna gRPC proxy serves them)."""
    storage = ProxyClient(url)
    storage.hello(plain_ok=True)
    return storage


class ProxyClient(GrpcStorageProxy):
    """Optuna's gRPC client on tuner's channel: TLS and the proxy's token when the environment
    gives them (tuner/study/storage/proxy_auth.py), and quick reconnects to a proxy started again."""

    def __init__(self, url: str) -> None:
        host, port = proxy_address(url)
        self._grpc = _grpc()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            GrpcStorageProxy.__init__(self, host=host, port=port)
        try:
            self.wait_server_ready(timeout=CONNECT_TIMEOUT_S)
        except ConnectionError:
            raise ProxyUnusable(f"no storage proxy answers at {host}:{port} within {CONNECT_TIMEOUT_S} s") from None

    def _setup(self) -> None:
        from optuna.storages._grpc.auto_generated.api_pb2_grpc import StorageServiceStub  # needs grpcio: imported once it is there

        self._ready, self._channel = proxy_auth.channel(_grpc(), self._host, self._port)
        self._stub = StorageServiceStub(self._channel)
        self._cache = GrpcClientCache(self._stub)
        # Closed at exit at the latest, so that no call is left under way on another thread (MLflow's
        # writer stores a run's id in its trial) while the interpreter shuts down: once, among 16
        # busy workers, one ended with gRPC's "terminate called without an active exception" (-6).
        weakref.finalize(self, self._ready.close)
        self._tuner = {
            name: self._channel.unary_unary(f"/{SERVICE}/{name}", request_serializer=encode, response_deserializer=decode)
            for name in METHODS
        }

    def wait_server_ready(self, timeout: float | None = None) -> None:
        try:
            self._grpc.channel_ready_future(self._ready).result(timeout=timeout)
        except self._grpc.FutureTimeoutError:
            raise ConnectionError("GRPC connection timeout") from None

    def close(self) -> None:
        self._ready.close()

    def hello(self, plain_ok: bool = False) -> dict[str, Any]:
        """tuner's first call: the proxy's heartbeat settings; ProxyUnusable when it refuses this
        client (no token, a wrong one) or is a plain Optuna proxy (``plain_ok``: {} then)."""
        try:
            return self._call("Hello", {})
        except self._grpc.RpcError as err:
            if err.code() == self._grpc.StatusCode.UNAUTHENTICATED:
                raise ProxyUnusable(proxy_auth.REFUSED) from None
            if err.code() == self._grpc.StatusCode.UNIMPLEMENTED:
                if plain_ok:
                    return {}
                # Short: the error line keeps about 120 characters of the URL and this reason.
                raise ProxyUnusable("a plain Optuna proxy: workers need `tuner storage-proxy` (budget, heartbeats)") from None
            raise ProxyUnusable(f"the storage proxy failed: {err.details()}") from None

    def _call(self, method: str, message: dict[str, Any]) -> dict[str, Any]:
        try:
            return self._tuner[method](message)
        except self._grpc.RpcError as err:
            if err.code() == self._grpc.StatusCode.NOT_FOUND:
                raise KeyError(err.details()) from err
            if err.code() == self._grpc.StatusCode.FAILED_PRECONDITION:
                raise optuna.exceptions.UpdateFinishedTrialError(err.details()) from err
            raise


@waits_out_outages
class ProxyStorage(ProxyClient, BaseHeartbeat, TrialAdmission):
    """Optuna's gRPC client, plus tuner's admission and heartbeats (``StaleListener``: Optuna's
    ``heartbeat_stale_trial_callback``, run in this worker for the stale trials it failed).
    With ``retry_s``, a proxy that cannot be reached is waited out that long (tuner/study/storage/outage.py)."""

    def __init__(self, url: str, on_stale: Any = None, retry_s: float | None = None) -> None:
        ProxyClient.__init__(self, url)
        TrialAdmission.__init__(self)
        hello = self.hello()
        # The proxy's experiment decides the heartbeat for every worker: its storage starts each
        # trial with a beat (tuner/study/storage/budget.py) and judges them by its grace period.
        self._interval = hello["heartbeat_interval"]
        self._on_stale = on_stale
        self._outage = Outage(url, retry_s) if retry_s is not None else None

    def finished_searched(self, study_id: int) -> int:
        """Finished searched configurations, counted in the proxy's database (BudgetedStorage.finished_searched)."""
        return self._call("FinishedSearched", {"study_id": study_id})["count"]

    def set_trial_user_attrs(self, trial_id: int, attrs: dict[str, Any]) -> None:
        """Several user attributes in one call and one transaction (BudgetedStorage.set_trial_user_attrs)."""
        self._call("SetUserAttrs", {"trial_id": trial_id, "attrs": attrs})

    # -- the trial budget's admission, under this worker's limit ----------------------------

    def create_new_trial(self, study_id: int, template_trial: optuna.trial.FrozenTrial | None = None) -> int:
        limit = self.limit_for(study_id)
        if template_trial is not None or limit is None:
            return super().create_new_trial(study_id, template_trial)
        reply = self._call("CreateTrial", {"study_id": study_id, "limit": limit_message(limit)})
        if reply.get("refused"):
            raise BudgetSpent(f"study {study_id}: no new trial may start")
        return reply["trial_id"]

    def set_trial_state_values(self, trial_id: int, state: TrialState, values: Sequence[float] | None = None) -> bool:
        if state != TrialState.RUNNING:
            return super().set_trial_state_values(trial_id, state, values)
        # Taking a queued trial that Optuna has just read (WAITING), so its study is in the cache.
        study_id = next((sid for sid, entry in self._cache.studies.items() if trial_id in entry.unfinished_trial_ids), None)
        limit = self.limit_for(study_id) if study_id is not None else None
        if limit is None:
            return super().set_trial_state_values(trial_id, state, values)  # the proxy's storage still locks the study
        return self._call("TakeQueued", {"trial_id": trial_id, "limit": limit_message(limit)})["taken"]

    # -- heartbeats: recorded and judged by the proxy's storage ------------------------------

    def record_heartbeat(self, trial_id: int) -> None:
        self._call("RecordHeartbeat", {"trial_id": trial_id})

    def _get_stale_trial_ids(self, study_id: int) -> list[int]:
        return self._call("StaleTrials", {"study_id": study_id})["trial_ids"]

    def get_heartbeat_interval(self) -> int | None:
        return self._interval

    def get_heartbeat_stale_trial_callback(self) -> Any:
        return self._on_stale
