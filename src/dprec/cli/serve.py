"""``dprec serve server|proxy|keys|token|openapi|demo`` and ``dprec simulate``: thin wrappers.

The services need the ``serve`` extra; everything heavy is imported inside the commands, so
``dprec --help`` works without it.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperCommand

from dprec.cli.common import Negatives, err, fail, load_dataset, progress
from dprec.cli.tables import save_and_show
from dprec.errors import DprecError

if TYPE_CHECKING:
    from fastapi import FastAPI

__all__ = [
    "DEPLOYABLE_HELP", "Host", "LOG_LEVELS", "LogLevel", "PortFile", "SecretFile", "Sync",
    "TokenKeyFile", "deployable_systems", "openapi_documents", "register", "serve_app",
    "serve_keys", "serve_openapi", "serve_proxy", "serve_server", "serve_token", "simulate",
]

serve_app = typer.Typer(help="Run the protocol's server and shuffling proxy as HTTP services.",
                        no_args_is_help=True)

SecretFile = Annotated[Path | None, typer.Option(
    "--secret-file", help="File with the proxy-server shared secret (or $DPREC_SHARED_SECRET).")]
TokenKeyFile = Annotated[Path | None, typer.Option(
    "--token-key-file", help="File with the key of the client tokens (or $DPREC_TOKEN_KEY).")]
Host = Annotated[str, typer.Option(help="Address to listen on.")]
PortFile = Annotated[Path | None, typer.Option(
    "--port-file", help="Write the bound port here (useful with --port 0).")]
Sync = Annotated[str, typer.Option(
    "--sync", help="SQLite durability: full (fsync before acknowledging) or normal.")]
LogLevel = Annotated[str, typer.Option("--log-level", help="debug, info, warning, error.")]
MaxConnections = Annotated[int, typer.Option(
    "--max-connections", help="Open connections served at once; more are refused (503).")]
HeaderTimeout = Annotated[float, typer.Option(
    "--header-timeout", help="Seconds for a request's headers to arrive (else 408, closed).")]
BodyTimeout = Annotated[float, typer.Option(
    "--body-timeout", help="Seconds for a request's body to arrive after its headers.")]
CorsOrigins = Annotated[list[str] | None, typer.Option(
    "--cors-origin", help="A browser page's origin (http://127.0.0.1:PORT) answered with CORS "
                          "headers; repeatable; none by default (`dprec serve demo`).")]
LOG_LEVELS = ("debug", "info", "warning", "error", "critical")
DEPLOYABLE_HELP = "{deployable}"
"""Stands for the deployable systems in a help text (:class:`_ListsDeployable`)."""


def deployable_systems() -> list[str]:
    """The registered systems that run as services, in the registry's order
    (:func:`dprec.systems.deployable.deployable_systems`); a system whose optional extra is
    not installed (PrivRec without torch) is named with what it needs."""
    from dprec.systems import deployable
    from dprec.systems.registry import spec

    names = []
    for name in deployable.deployable_systems():
        missing = spec(name).missing_extra()
        names.append(name if missing is None else
                     f"{name} (unavailable: {name} needs {missing}; pip install {missing})")
    return names


class _ListsDeployable(TyperCommand):
    """A command whose help names the deployable systems (:data:`DEPLOYABLE_HELP`), listed
    only when the help is shown: listing them loads every system."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        names = ", ".join(deployable_systems())
        for param in self.params:
            text = getattr(param, "help", None)
            if text and DEPLOYABLE_HELP in text:
                param.help = text.replace(DEPLOYABLE_HELP, names)  # type: ignore[attr-defined]
        super().format_help(ctx, formatter)


def _check_options(port: int, log_level: str) -> None:
    """One-line errors for options that would otherwise fail deep inside."""
    if not 0 <= port <= 65535:
        raise DprecError(f"--port must be in 0..65535 (0: any free port), got {port}")
    if log_level.lower() not in LOG_LEVELS:
        raise DprecError(f"--log-level must be one of {', '.join(LOG_LEVELS)}, got "
                         f"{log_level!r}")


def _bind(host: str, port: int, port_file: Path | None) -> Any:
    """Listen on ``host:port`` (0: any free port) and report the port, before the slow
    imports, so that a launcher can start the next service meanwhile."""
    import socket

    from dprec.client.ledger import atomic_write

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto IPPROTO_TCP (not 0): asyncio then sets TCP_NODELAY on accepted connections,
    # without which every small response waits ~40 ms for a delayed ACK
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except (OSError, OverflowError) as e:
        sock.close()
        why = getattr(e, "strerror", None) or str(e)
        raise DprecError(f"cannot listen on {host}:{port}: {why}") from None
    sock.listen(2048)
    if port_file is not None:
        atomic_write(port_file, f"{sock.getsockname()[1]}\n".encode())
    return sock


def _serve(app: FastAPI, sock: Any, log_level: str, access_log: bool,
           state: Path | None = None, limits: Any = None) -> None:
    """Serve ``app`` on the bound socket until stopped (or until the launcher dies:
    :data:`~dprec.services.EXIT_WITH_PARENT`), under the connection ``limits``
    (:class:`~dprec.services.connections.ConnectionLimits`; None: the defaults)."""
    import uvicorn

    from dprec.services import EXIT_WITH_PARENT
    from dprec.services.connections import ConnectionLimits, uvicorn_settings

    logging.getLogger("dprec").setLevel(log_level.upper())
    config = uvicorn.Config(app, log_level=log_level.lower(), access_log=access_log,
                            **uvicorn_settings(limits or ConnectionLimits()))
    server = uvicorn.Server(config)
    watch = os.environ.get(EXIT_WITH_PARENT)
    orphaned = _watch_parent(server) if watch else None
    server.run(sockets=[sock])
    if orphaned is not None and orphaned.is_set() and watch not in (None, "1"):
        _remove_launch_folder(Path(watch), state)


def _limits(max_connections: int, header_timeout: float, body_timeout: float) -> Any:
    """The connection limits of the options (:class:`DprecError` if out of range)."""
    from dprec.services.connections import ConnectionLimits
    return ConnectionLimits(header_timeout=header_timeout, body_timeout=body_timeout,
                            max_connections=max_connections)


def _watch_parent(server: Any) -> Any:
    """Stop ``server`` once stdin ends (the launcher holds its other end: it died)."""
    import threading
    import time

    orphaned = threading.Event()

    def wait() -> None:
        try:
            while sys.stdin.buffer.read(4096):
                pass
        except (OSError, ValueError):
            pass
        orphaned.set()
        server.should_exit = True
        time.sleep(10)  # then stop waiting for requests in flight
        server.force_exit = True

    threading.Thread(target=wait, name="dprec-parent-watch", daemon=True).start()
    return orphaned


def _remove_launch_folder(root: Path, state: Path | None) -> None:
    """Remove this service's state folder if it lies in the launcher's folder ``root``,
    then ``root`` itself once empty (the last service to go removes it)."""
    import shutil

    if state is None or root.resolve() not in state.resolve().parents:
        return
    shutil.rmtree(state, ignore_errors=True)
    try:
        root.rmdir()
    except OSError:
        pass


def _protocol_info(protocol: str, n_items: int | None, dataset: str | None,
                   data_dir: Path | None, epsilon: float | None, param: list[str] | None,
                   config: Path | None, aggregator: str) -> Any:
    from dprec.services.roles import aggregator as aggregator_of
    from dprec.systems.deployable import ProtocolInfo
    from dprec.systems.params import config_from_file, param_pairs, system_params
    from dprec.systems.registry import make_system

    base, _ = config_from_file(config, protocol)
    cfg = make_system(protocol, system_params(protocol, epsilon, param_pairs(param)), base).config
    if (n_items is None) == (dataset is None):
        raise DprecError("give the item count: --n-items N or --dataset NAME (read for its "
                         "shape only)")
    if n_items is None:
        n_items = load_dataset(dataset, data_dir).n_items
    info = ProtocolInfo(protocol, int(n_items), cfg, aggregator)
    aggregator_of(info)  # the name must be one of the system's aggregators
    return info


@serve_app.command("server", cls=_ListsDeployable)
def serve_server(
    protocol: Annotated[str, typer.Option(
        help=f"The system whose protocol to run: one of {DEPLOYABLE_HELP}.")],
    state: Annotated[Path, typer.Option(help="Folder of the server's durable state.")],
    secret_file: SecretFile = None,
    n_items: Annotated[int | None, typer.Option("--n-items", help="N, the item count.")] = None,
    dataset: Annotated[str | None, typer.Option(
        help="A data set, read only for its item count (instead of --n-items).")] = None,
    data_dir: Annotated[Path | None, typer.Option("--data-dir", envvar="DPREC_DATA")] = None,
    epsilon: Annotated[float | None, typer.Option(help="Sets the system's epsilon.")] = None,
    param: Annotated[list[str] | None, typer.Option(
        "--param", help="KEY=VALUE on the system's config, as for `dprec run`.")] = None,
    config: Annotated[Path | None, typer.Option("--config", help="A TOML config.")] = None,
    aggregator: Annotated[str, typer.Option(help=(
        "How reports are combined: mean; for fmf-ldp also trimmed[:FRACTION] (per-cell "
        "trimmed mean, default 0.1) and median-of-means[:GROUPS] (default 5); for the "
        "DPLCF family dplcf-range[:RATE] (validity range of the number of ones, default "
        "1e-9), dplcf-screen[:Z] and dplcf-range+screen[:Z] (itemset screening, z = 20)."
        ))] = "mean",
    host: Host = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port (0: any free port).")] = 8400,
    port_file: PortFile = None,
    sync: Sync = "full",
    max_batch_mb: Annotated[int, typer.Option(
        "--max-batch-mb", help="Largest forwarded batch accepted, MiB.")] = 256,
    autostart: Annotated[bool, typer.Option(
        help="Start the protocol now, V drawn from a CSPRNG (else on POST /v1/start).")
    ] = False,
    log_level: LogLevel = "warning",
    max_connections: MaxConnections = 1000,
    header_timeout: HeaderTimeout = 10.0,
    body_timeout: BodyTimeout = 60.0,
    cors_origin: CorsOrigins = None,
) -> None:
    """The server role (untrusted, or a trusted aggregator where the role says so):
    publishes artefacts, takes the proxy's batches, runs rounds."""
    try:
        _check_options(port, log_level)
        limits = _limits(max_connections, header_timeout, body_timeout)
        if max_batch_mb < 1:
            raise DprecError(f"--max-batch-mb must be >= 1 (MiB), got {max_batch_mb}")
        sock = _bind(host, port, port_file)
        from dprec.services.auth import read_secret
        from dprec.services.server import ServerSettings, create_server_app
        info = _protocol_info(protocol, n_items, dataset, data_dir, epsilon, param, config,
                              aggregator)
        settings = ServerSettings(info, state, read_secret(secret_file, "DPREC_SHARED_SECRET",
                                                           "shared secret"),
                                  sync=sync, max_batch_bytes=max_batch_mb << 20,  # type: ignore[arg-type]
                                  autostart=autostart)
        _serve(_with_cors(create_server_app(settings), cors_origin), sock, log_level, True,
               state, limits)
    except DprecError as e:
        fail(e)


@serve_app.command("proxy")
def serve_proxy(
    server: Annotated[str, typer.Option(help="The server's URL, e.g. http://127.0.0.1:8400.")],
    state: Annotated[Path, typer.Option(help="Folder of the proxy's durable state.")],
    secret_file: SecretFile = None,
    token_key_file: TokenKeyFile = None,
    threshold: Annotated[int, typer.Option(
        help="Fewest distinct senders forwarded together (anonymity threshold).")] = 100,
    batch_senders: Annotated[int, typer.Option(
        "--batch-senders", help="Senders per batch forwarded while a round is open.")] = 1000,
    operator_secret_file: Annotated[Path | None, typer.Option(
        "--operator-secret-file",
        help="File with the operator's secret (or $DPREC_OPERATOR_SECRET): it alone closes "
             "rounds here; it must differ from the shared secret the server holds.")] = None,
    min_honest: Annotated[int | None, typer.Option(
        "--min-honest", help="Secure sum: the min_honest agreed with the clients; a server "
             "publishing another is refused (default: the first value seen).")] = None,
    n_clients: Annotated[int | None, typer.Option(
        "--n-clients", help="Secure sum: the n_clients agreed with the clients; a server "
             "publishing another is refused (default: the first value seen).")] = None,
    max_body: Annotated[int | None, typer.Option(
        "--max-body", help="Largest submission, bytes (default: the protocol's message).")
    ] = None,
    rate: Annotated[float, typer.Option(help="Requests/s per remote address.")] = 5000.0,
    burst: Annotated[float, typer.Option(help="Burst of the rate limit.")] = 10000.0,
    round_seconds: Annotated[float | None, typer.Option(
        "--round-seconds", help="Close the open round every this many seconds.")] = None,
    host: Host = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port (0: any free port).")] = 8401,
    port_file: PortFile = None,
    sync: Annotated[str, typer.Option(
        "--sync", help="SQLite durability: normal (survives a process crash; default) or "
                       "full (also a power loss; fsync per submission).")] = "normal",
    log_level: LogLevel = "warning",
    max_connections: MaxConnections = 1000,
    header_timeout: HeaderTimeout = 10.0,
    body_timeout: BodyTimeout = 60.0,
    cors_origin: CorsOrigins = None,
) -> None:
    """The shuffling proxy: one message per client and round, shuffled batches forwarded."""
    try:
        _check_options(port, log_level)
        limits = _limits(max_connections, header_timeout, body_timeout)
        from dprec.services.proxy import check_url
        check_url(server, "--server")
        sock = _bind(host, port, port_file)
        from dprec.services.auth import read_secret
        from dprec.services.proxy import ProxySettings, create_proxy_app
        settings = ProxySettings(
            server, state, read_secret(secret_file, "DPREC_SHARED_SECRET", "shared secret"),
            read_secret(token_key_file, "DPREC_TOKEN_KEY", "token key"),
            operator_secret=_operator_secret(operator_secret_file), threshold=threshold,
            batch_senders=batch_senders, max_body=max_body, rate=rate, burst=burst,
            sync=sync, round_seconds=round_seconds, min_honest=min_honest,
            n_clients=n_clients)  # type: ignore[arg-type]
        # no access log: the proxy keeps no transport metadata
        _serve(_with_cors(create_proxy_app(settings), cors_origin), sock, log_level, False,
               state, limits)
    except DprecError as e:
        fail(e)


def _with_cors(app: FastAPI, origins: list[str] | None) -> FastAPI:
    """``app`` answering the browser pages of ``origins``
    (:func:`~dprec.services.http.install_cors`)."""
    from dprec.services.http import install_cors
    install_cors(app, origins or [])
    return app


def _operator_secret(path: Path | None) -> bytes | None:
    """The proxy's operator secret from ``path`` or $DPREC_OPERATOR_SECRET (None: neither)."""
    from dprec.services.auth import read_secret
    if path is None and not os.environ.get("DPREC_OPERATOR_SECRET"):
        return None
    return read_secret(path, "DPREC_OPERATOR_SECRET", "operator secret")


@serve_app.command("keys")
def serve_keys(folder: Annotated[Path, typer.Argument(help="Where to write the keys.")]) -> None:
    """Write a new shared secret (shared.secret), the proxy's operator secret
    (operator.secret) and the client-token key (token.key), mode 0600."""
    from dprec.services.launch import write_key
    folder.mkdir(parents=True, exist_ok=True)
    names = ("shared.secret", "operator.secret", "token.key")
    for name in names:
        try:
            write_key(folder / name)
        except FileExistsError:
            fail(DprecError(f"{folder / name} exists; not overwriting a key"))
    typer.echo("wrote " + ", ".join(str(folder / n) for n in names))


@serve_app.command("token")
def serve_token(
    client_id: Annotated[int, typer.Argument(help="The client's id.")],
    token_key_file: TokenKeyFile = None,
) -> None:
    """Print a client's token (HMAC of its id under the token key)."""
    from dprec.services.auth import client_token, read_secret
    try:
        if not -(1 << 63) <= client_id < (1 << 63):
            raise DprecError(f"a client id is a 64-bit signed integer (what the proxy takes), "
                             f"got {client_id}")
        typer.echo(client_token(read_secret(token_key_file, "DPREC_TOKEN_KEY", "token key"),
                                client_id))
    except DprecError as e:
        fail(e)


def openapi_documents() -> dict[str, dict[str, Any]]:
    """The two services' OpenAPI documents (they do not depend on the configuration)."""
    import tempfile

    from dprec.services.proxy import ProxySettings, create_proxy_app
    from dprec.services.server import ServerSettings, create_server_app
    from dprec.systems.deployable import ProtocolInfo
    from dprec.systems.registry import make_config
    info = ProtocolInfo("dplcf-sp", 8, make_config("dplcf-sp", {"epsilon": 1.0, "neighbours": 2,
                                                              "batch_size": 8}))
    with tempfile.TemporaryDirectory() as tmp:
        key = b"0" * 32
        server = create_server_app(ServerSettings(info, Path(tmp) / "s", key))
        proxy = create_proxy_app(ProxySettings("http://127.0.0.1:9", Path(tmp) / "p", key, key))
        return {"server": server.openapi(), "proxy": proxy.openapi()}


@serve_app.command("openapi")
def serve_openapi(folder: Annotated[Path, typer.Argument(
        help="Where to write server.json and proxy.json.")] = Path("src/dprec/services/openapi")
) -> None:
    """Write the services' OpenAPI documents (the committed copies are checked by a test)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, doc in openapi_documents().items():
        (folder / f"{name}.json").write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    typer.echo(f"wrote {folder}/server.json and {folder}/proxy.json")


def simulate(
    system: Annotated[str, typer.Argument(help=f"One of {DEPLOYABLE_HELP}.")],
    transport: Annotated[str, typer.Option(
        help="inproc: today's single process; http: the services on loopback (or --server/"
             "--proxy), one request per client.")] = "inproc",
    dataset: Annotated[str, typer.Option(help="Data set name.")] = "ml-100k",
    epsilon: Annotated[float | None, typer.Option(help="Sets the system's epsilon.")] = None,
    param: Annotated[list[str] | None, typer.Option(
        "--param", help="KEY=VALUE on the system's config, as for `dprec run`.")] = None,
    config: Annotated[Path | None, typer.Option("--config", help="A TOML config.")] = None,
    seeds: Annotated[int, typer.Option("--seeds", min=1, help="Number of seeds (0..n-1).")
                     ] = 5,
    split: Annotated[str | None, typer.Option(
        help="Ranking: latest (default) or random (leave-one-out); rating: user (default, "
             "80/20 users; a simulation trains once per seed).")] = None,
    negatives: Negatives = 99,
    server: Annotated[str | None, typer.Option(
        help="Use this running server (with --proxy; one seed).")] = None,
    proxy: Annotated[str | None, typer.Option(help="Use this running proxy.")] = None,
    secret_file: SecretFile = None,
    token_key_file: TokenKeyFile = None,
    threshold: Annotated[int | None, typer.Option(
        help="Proxy threshold of started services (default: the system's shuffle_threshold, "
             "100 for DPLCF); it becomes the simulated system's shuffle_threshold.")] = None,
    batch_senders: Annotated[int | None, typer.Option(
        "--batch-senders", help="Senders per batch of started proxies (default: 1000, or "
                                "the threshold if larger).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")
                       ] = False,
    data_dir: Annotated[Path | None, typer.Option("--data-dir", envvar="DPREC_DATA")] = None,
    out_dir: Annotated[Path, typer.Option("--out", help="Where results are written.")
                       ] = Path("results"),
) -> None:
    """Run a protocol with N simulated clients in process or through the HTTP services;
    the same seeds give the same model and metrics either way (`dprec run`'s contract),
    except on the secure sum (dp-pop, dpals, dp-fedavg): over HTTP their clients draw as
    devices, from their own CSPRNGs, so only the privacy report and the structure match."""
    from dprec.evaluation.results import check_output_base
    from dprec.evaluation.run_system import run_system
    from dprec.systems.params import config_from_file, param_pairs, system_params

    closers: list[Any] = []
    try:
        if transport not in ("inproc", "http"):
            raise DprecError(f"--transport must be inproc or http, got {transport!r}")
        _check_proxy_options(threshold, batch_senders)
        check_output_base(out_dir)
        base, cf = config_from_file(config, system)
        params = system_params(system, epsilon, param_pairs(param))
        ds = load_dataset(dataset, data_dir)
        if transport == "http":
            params = _http_params(system, params, base, threshold, server, proxy)

        def start() -> Any:  # the services, once the system is known to run over them
            return _http_transport(system, params, config, server, proxy, secret_file,
                                   token_key_file, threshold, batch_senders, seeds, closers)

        with progress() as bar:
            task = bar.add_task(f"{system} on {dataset} ({transport})", total=seeds)
            res = run_system(system, ds, params, start if transport == "http" else None,
                             base=base, seeds=seeds, split=split, negatives=negatives,
                             simulation=True, on_seed=lambda _: bar.advance(task))
    except DprecError as e:
        fail(e)
    finally:
        for c in reversed(closers):
            c()
    if cf is not None:
        res.config_file = {"path": cf.path, "provenance": cf.provenance}
    save_and_show({**res.to_json(), "transport": transport}, out_dir, dataset, system,
                  f"{system} on {dataset} ({seeds} seeds, {transport})", as_json)


def _http_params(system: str, params: dict[str, Any], base: Any, threshold: int | None,
                 server: str | None, proxy: str | None) -> dict[str, Any]:
    """The parameters of a simulation over HTTP: running services (``--server`` and
    ``--proxy``) checked reachable first, and a shuffled system's ``shuffle_threshold`` set
    to what the proxy enforces (:func:`_enforced_threshold`)."""
    from dprec.systems.registry import make_config
    if server is not None and proxy is not None:
        from dprec.services.transport import check_reachable
        check_reachable({"server": server, "proxy": proxy})
    cfg = make_config(system, params, base)
    if hasattr(cfg, "shuffle_threshold"):
        params = _enforced_threshold(params, cfg.shuffle_threshold, threshold, server, proxy)
    return params


def _check_proxy_options(threshold: int | None, batch_senders: int | None) -> None:
    """Refuse a proxy option that would otherwise be replaced by another value."""
    if threshold is not None and threshold < 1:
        raise DprecError(f"--threshold must be >= 1 (senders), got {threshold}")
    if batch_senders is not None:
        if batch_senders < 1:
            raise DprecError(f"--batch-senders must be >= 1, got {batch_senders}")
        if threshold is not None and batch_senders < threshold:
            raise DprecError(f"--batch-senders must be >= --threshold ({threshold}), got "
                             f"{batch_senders}")


def _enforced_threshold(params: dict[str, Any], planned: int, threshold: int | None,
                        server: str | None, proxy: str | None) -> dict[str, Any]:
    """The system's parameters with ``shuffle_threshold`` set to what the proxy enforces:
    ``--threshold`` for the proxy started here (the server started here publishes it too),
    or what a running proxy states (a warning if below the protocol's published one)."""
    if server is None:
        if threshold is None or threshold == planned:
            return params
        if "shuffle_threshold" in params:
            raise DprecError(f"--threshold {threshold} and --param shuffle_threshold="
                             f"{params['shuffle_threshold']} disagree: give one")
        return {**params, "shuffle_threshold": int(threshold)}
    from dprec.client.http import ProxyAPI, ServerAPI
    from dprec.systems.deployable import ProtocolInfo
    if threshold is not None:
        raise DprecError("--threshold sets the threshold of the proxy started here; a running "
                         "proxy (--proxy) states its own")
    proxy_api, server_api = ProxyAPI(proxy), ServerAPI(server)  # type: ignore[arg-type]
    try:
        enforced = int(proxy_api.round()["threshold"])
        info = ProtocolInfo.from_json(server_api.protocol_doc())
        published = info.deployment.published_threshold(info.config)
    finally:
        proxy_api.close()
        server_api.close()
    if published is not None and enforced < int(published):
        err.print(f"[yellow]warning:[/] the proxy at {proxy} enforces a threshold of {enforced} "
                  f"senders, below the {published} the protocol publishes; the report states "
                  f"{enforced} and accounts for the batches the server received")
    return {**params, "shuffle_threshold": enforced}


def _http_transport(system: str, params: dict[str, Any], config: Path | None,
                    server: str | None, proxy: str | None, secret_file: Path | None,
                    token_key_file: Path | None, threshold: int | None,
                    batch_senders: int | None,
                    seeds: int, closers: list[Any]) -> Any:
    if (server is None) != (proxy is None):
        raise DprecError("give both --server and --proxy, or neither (then both start here)")
    if server is not None:
        from dprec.services.auth import read_secret
        from dprec.services.transport import HttpTransport
        if seeds != 1:
            raise DprecError("a running server runs one protocol: use --seeds 1 with --server")
        if batch_senders is not None:
            raise DprecError("--batch-senders sets the batches of the proxy started here; a "
                             "running proxy (--proxy) forms its own")
        net = HttpTransport(server, proxy,  # type: ignore[arg-type]
                            read_secret(secret_file, "DPREC_SHARED_SECRET", "shared secret"),
                            read_secret(token_key_file, "DPREC_TOKEN_KEY", "token key"),
                            operator_secret=_operator_secret(None))
        closers.append(net.close)
        return net
    from dprec.services.launch import Loopback, LoopbackTransport
    loop = Loopback(Path(os.environ["DPREC_SERVICES_DIR"])
                    if os.environ.get("DPREC_SERVICES_DIR") else None)
    closers.append(lambda: loop.__exit__(None, None, None))
    net = LoopbackTransport(loop, system, {k: str(v) for k, v in params.items()}, config,
                            threshold, batch_senders)
    closers.append(net.close)
    return net


def register(app: typer.Typer) -> None:
    """Add ``serve`` and ``simulate`` to the main CLI."""
    from dprec.cli.demo import serve_demo
    serve_app.command("demo")(serve_demo)
    app.add_typer(serve_app, name="serve")
    app.command("simulate", cls=_ListsDeployable)(simulate)
