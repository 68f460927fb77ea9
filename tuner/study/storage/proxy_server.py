"""`tuner storage-proxy`: one study storage served to many workers over gRPC.

Optuna's gRPC storage proxy (``optuna.storages.run_grpc_proxy_server``) answers the reads and
writes of Optuna's own client from one process holding the database; beside it, on the same
port, a second service answers what tuner's workers add (tuner/study/storage/proxy.py): a
trial admitted under the worker's limit, and heartbeats. Every call a worker makes runs on
one of the proxy's ``threads``, which share that many database connections: with the proxy,
the database sees ``threads`` connections however many workers there are.

The storage is opened once, here, with Optuna's cache in front of it (Optuna's advice for
the proxy: each worker's read then costs the database only what changed since the last
one), and the tables are created before any worker connects.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import optuna
from optuna.storages._cached_storage import _CachedStorage
from optuna.trial import TrialState

from tuner import signals
from tuner.errors import ConfigError
from tuner.redact import redact
from tuner.study.experiment.load import Heartbeat
from tuner.study.storage import proxy_auth
from tuner.study.storage.budget import BudgetedStorage, BudgetSpent
from tuner.study.storage.open import open_storage
from tuner.study.storage.proxy import METHODS, NEEDS_EXTRA, SERVICE, decode, encode, is_proxy, limit_from
from tuner.study.storage.storage_errors import StorageLost

THREADS = 10  # Optuna's default for its proxy
STOP_GRACE_S = 5.0  # calls under way when the proxy is stopped get this long to finish


class ProxyCache(_CachedStorage):
    """Optuna's cache in front of the proxy's storage, for trials it has not seen yet.

    Optuna's cache sets a trial's parameter only for a trial it holds (a KeyError, NOT_FOUND to
    the worker, otherwise): a proxy started again mid-study holds none of the trials its workers
    were running. It reads such a trial's study first.
    """

    def set_trial_param(self, trial_id: int, param_name: str, param_value_internal: float, distribution: Any) -> None:
        with self._lock:
            known = trial_id in self._trial_id_to_study_id_and_number
        if not known:
            self.get_all_trials(self._backend.study_of_trial(trial_id), deepcopy=False)
        super().set_trial_param(trial_id, param_name, param_value_internal, distribution)


class TunerService:
    """The calls tuner's client adds to Optuna's (tuner/study/storage/proxy.py), served from one storage."""

    def __init__(self, cached: _CachedStorage, backend: BudgetedStorage, grpc: Any) -> None:
        self.cached, self.backend, self.grpc = cached, backend, grpc

    def Hello(self, request: dict, context: Any) -> dict:
        return {"heartbeat_interval": self.backend.heartbeat_interval, "grace_period": self.backend.grace_period}

    def CreateTrial(self, request: dict, context: Any) -> dict:
        # Through the cache, so that the trial is known to it when the worker writes its parameters.
        with self.backend.limited(limit_from(request["limit"])):
            try:
                return {"trial_id": self.found(context, self.cached.create_new_trial, request["study_id"])}
            except BudgetSpent:
                return {"refused": True}

    def TakeQueued(self, request: dict, context: Any) -> dict:
        with self.backend.limited(limit_from(request["limit"])):
            return {"taken": self.found(context, self.cached.set_trial_state_values, request["trial_id"], TrialState.RUNNING)}

    def RecordHeartbeat(self, request: dict, context: Any) -> dict:
        self.found(context, self.backend.record_heartbeat, request["trial_id"])
        return {}

    def StaleTrials(self, request: dict, context: Any) -> dict:
        if self.backend.heartbeat_interval is None:
            return {"trial_ids": []}
        return {"trial_ids": self.found(context, self.backend._get_stale_trial_ids, request["study_id"])}

    def FinishedSearched(self, request: dict, context: Any) -> dict:
        return {"count": self.backend.finished_searched(request["study_id"])}

    def SetUserAttrs(self, request: dict, context: Any) -> dict:
        self.found(context, self.backend.set_trial_user_attrs, request["trial_id"], request["attrs"])
        return {}

    def found(self, context: Any, call: Callable[..., Any], *args: Any) -> Any:
        """``call(*args)``; an unknown study or trial answers NOT_FOUND and a finished trial
        FAILED_PRECONDITION, as Optuna's service does."""
        try:
            return call(*args)
        except KeyError as err:
            context.abort(self.grpc.StatusCode.NOT_FOUND, str(err))
        except optuna.exceptions.UpdateFinishedTrialError as err:
            context.abort(self.grpc.StatusCode.FAILED_PRECONDITION, str(err))

    def handler(self) -> Any:
        methods = {
            name: self.grpc.unary_unary_rpc_method_handler(getattr(self, name), request_deserializer=decode, response_serializer=encode)
            for name in METHODS
        }
        return self.grpc.method_handlers_generic_handler(SERVICE, methods)


def start_proxy(url: str, heartbeat: Heartbeat, source: str, host: str, port: int, threads: int = THREADS) -> Any:
    """Open the storage and start serving it; returns the started grpc.Server. ConfigError when it cannot."""
    # gRPC's core would log its own line for a port it cannot bind, before the error below says so.
    os.environ.setdefault("GRPC_VERBOSITY", "NONE")
    try:
        import grpc
        from optuna.storages._grpc.auto_generated.api_pb2_grpc import add_StorageServiceServicer_to_server
        from optuna.storages._grpc.servicer import OptunaStorageProxyService
    except ImportError:
        raise ConfigError(source, "storage-proxy", "grpcio and protobuf", NEEDS_EXTRA) from None
    if is_proxy(url):
        raise ConfigError(source, "storage", "the database the proxy serves (sqlite://, postgresql://, mysql://)", url)
    if threads < 1:
        raise ConfigError("tuner storage-proxy", "--threads", "an integer >= 1", threads)
    secret, credentials = proxy_auth.token(), proxy_auth.server_credentials(grpc)  # refused before the storage is touched
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # as open_study: no "A new study created" line per study
    backend = open_storage(url, heartbeat, source, connections=threads, records_owner=False)  # its trials run in the workers
    assert isinstance(backend, BudgetedStorage)
    cached = ProxyCache(backend)
    # Optuna's proxy server (optuna.storages._grpc.server.make_server) built here, for two options:
    # gRPC binds with SO_REUSEPORT, so a second proxy on a taken port would share it silently;
    # and the interceptor that checks the token (tuner/study/storage/proxy_auth.py).
    server = grpc.server(
        ThreadPoolExecutor(max_workers=threads),
        options=[("grpc.so_reuseport", 0)],
        interceptors=[proxy_auth.guard(grpc, secret, StorageLost)],
    )
    add_StorageServiceServicer_to_server(OptunaStorageProxyService(cached), server)
    try:
        if credentials is not None:
            server.add_secure_port(f"{host}:{port}", credentials)
        else:
            server.add_insecure_port(f"{host}:{port}")
    except RuntimeError:  # grpcio: "Failed to bind to address ..."
        backend.engine.dispose()
        raise ConfigError("tuner storage-proxy", "--host/--port", "a free port on an address of this machine", f"{host}:{port}") from None
    server.add_generic_rpc_handlers((TunerService(cached, backend, grpc).handler(),))
    server.start()
    server.tuner_backend = backend  # type: ignore[attr-defined]  # for serve(): is its database lost?
    guarded = f"TLS {'on' if credentials is not None else 'off'}, token {'on' if secret is not None else 'off'}"
    server.tuner_guarded = guarded  # type: ignore[attr-defined]  # for serve()'s first line
    return server


def serve(url: str, heartbeat: Heartbeat, source: str, host: str, port: int, threads: int = THREADS, quiet: bool = False) -> None:
    """Serve until SIGINT or SIGTERM (then ``signals.Interrupted``); calls under way get STOP_GRACE_S to finish."""
    with signals.handled():
        server = start_proxy(url, heartbeat, source, host, port, threads)
        try:
            if not quiet:
                beat = f"heartbeat every {heartbeat.interval_s} s, grace {heartbeat.grace_s} s" if heartbeat.interval_s else "no heartbeat"
                print(
                    f"storage proxy for {redact(url)} listening on {host}:{port} ({threads} threads, {beat}); {server.tuner_guarded}",
                    file=sys.stderr,
                    flush=True,
                )
            outage = server.tuner_backend._outage
            while True:
                signals.raise_if_pending()
                if outage is not None and outage.lost is not None:
                    raise StorageLost(outage.lost)  # its database is gone past heartbeat.retry_s: exit 75, to be started again
                time.sleep(0.25)
        finally:
            server.stop(STOP_GRACE_S).wait()
