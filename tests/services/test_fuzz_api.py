"""The HTTP APIs fuzzed from their own OpenAPI documents (schemathesis, fixed budget): no
500, whatever arrives. Once with the generated headers (mostly refused credentials), once
with valid credentials so that bodies and rounds reach the parsers and the stores."""

import atexit
import shutil
import tempfile
import warnings
from pathlib import Path

import httpx
import numpy as np
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from svc import AUTH, OPERATOR, OPERATOR_AUTH, SECRET, TOKEN_KEY, dplcf_info, fmf_info, headers

from dprec.protocol.deployment import generator_to_json
from dprec.services.proxy import ProxySettings, create_proxy_app
from dprec.services.server import ServerSettings, create_server_app

warnings.filterwarnings("ignore", category=DeprecationWarning)

EXAMPLES = 25
_ROOT = Path(tempfile.mkdtemp(prefix="dprec-fuzz-"))
atexit.register(shutil.rmtree, _ROOT, True)
SERVER = create_server_app(ServerSettings(fmf_info(), _ROOT / "server", SECRET,
                                          max_batch_bytes=1 << 16))
DPLCF_SERVER = create_server_app(ServerSettings(dplcf_info(), _ROOT / "dplcf", SECRET))
PROXY = create_proxy_app(ProxySettings("http://server", _ROOT / "proxy", SECRET, TOKEN_KEY,
                                       threshold=2, batch_senders=2, operator_secret=OPERATOR,
                                       server_transport=httpx.ASGITransport(SERVER)))
for app in (SERVER, DPLCF_SERVER):  # started, so that batches and closes get far
    app.state.service.start(generator_to_json(np.random.default_rng(0)))

server_schema = schemathesis.openapi.from_asgi("/openapi.json", SERVER)
dplcf_schema = schemathesis.openapi.from_asgi("/openapi.json", DPLCF_SERVER)
proxy_schema = schemathesis.openapi.from_asgi("/openapi.json", PROXY)
fuzz = settings(max_examples=EXAMPLES, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))


@server_schema.parametrize()
@fuzz
def test_server_as_generated(case):
    case.call_and_validate(checks=[not_a_server_error])


@server_schema.parametrize()
@fuzz
def test_server_authenticated(case):
    h = {**AUTH, "Idempotency-Key": "fuzz-key-0001"}
    case.call_and_validate(headers=h, checks=[not_a_server_error])


@dplcf_schema.parametrize()
@fuzz
def test_dplcf_server_authenticated(case):
    h = {**AUTH, "Idempotency-Key": "fuzz-key-0002"}
    case.call_and_validate(headers=h, checks=[not_a_server_error])


@proxy_schema.parametrize()
@fuzz
def test_proxy_as_generated(case):
    case.call_and_validate(checks=[not_a_server_error])


@proxy_schema.parametrize()
@fuzz
def test_proxy_authenticated(case):
    h = {k: v for k, v in headers(1).items() if k != "Content-Type"}
    if case.path.endswith("/close") or case.path.endswith("/secret"):
        h = OPERATOR_AUTH
    case.call_and_validate(headers=h, checks=[not_a_server_error])
