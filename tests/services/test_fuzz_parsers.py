"""The services' parsers fuzzed (hypothesis, fixed budget): whatever bytes or JSON arrive,
the only outcome besides acceptance is the module's own error (never a crash), and what is
accepted is what the protocol's client or proxy can send."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from svc import dplcf_info, fmf_info

from dprec.errors import DprecError
from dprec.protocol.deployment import generator_from_json, generator_to_json
from dprec.protocol.messages import GradientReports, Message, MessageError, ShuffledReports
from dprec.services.auth import bearer
from dprec.systems.deployable import ProtocolInfo, check_forwarded, check_upload
from dprec.systems.dplcf.messages import ObfuscatedBits

EXAMPLES = 150
INFOS = [fmf_info(), fmf_info(mechanism="piecewise", epsilon=2.0), dplcf_info()]
PREFIXES = [GradientReports(1, [1, 2, 3, 4], [0, 1, 2, 0], [1, 0, 1, 1]).to_bytes(),
            ShuffledReports([1, 2], [0, 1], [1, 0]).to_bytes(),
            ObfuscatedBits.pack(np.eye(1, 20)).to_bytes()]


def _parse_and_check(data: bytes, info: ProtocolInfo, upload: bool) -> bool:
    """False if refused with the module's error; True, after checking it, if accepted."""
    try:
        m = Message.from_bytes(data)
        (check_upload if upload else check_forwarded)(m, info)
    except MessageError:
        return False
    assert type(m) is (info.upload if upload else info.forward)
    if hasattr(m, "items") and m.k:
        assert m.items.max() < info.n_items and m.factors.max() < info.n_factors
    return True


def test_the_checker_accepts_what_the_protocols_send():
    """The fuzz tests below pass on refusal: this one fails if everything is refused."""
    assert _parse_and_check(PREFIXES[0], INFOS[0], upload=True)
    assert _parse_and_check(PREFIXES[1], INFOS[0], upload=False)
    assert _parse_and_check(PREFIXES[2], INFOS[2], upload=True)
    assert not _parse_and_check(PREFIXES[0], INFOS[2], upload=True)  # wrong protocol
    assert ProtocolInfo.from_json(INFOS[0].to_json()).family == "fmf"
    g = np.random.default_rng(3)
    restored = generator_from_json(generator_to_json(g))
    assert restored.random() == g.random()


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.sampled_from(PREFIXES), st.integers(0, 40), st.binary(max_size=64),
       st.sampled_from(range(len(INFOS))), st.booleans())
def test_mutated_messages_are_refused_or_valid(prefix, cut, tail, which, upload):
    data = prefix[:cut] + tail if cut < len(prefix) else prefix + tail
    _parse_and_check(data, INFOS[which], upload)


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.binary(max_size=200), st.sampled_from(range(len(INFOS))), st.booleans())
def test_random_bytes_are_refused_or_valid(data, which, upload):
    _parse_and_check(data, INFOS[which], upload)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner,
                                                                max_size=5), max_leaves=12)


@settings(max_examples=EXAMPLES, deadline=None)
@given(json_values, st.sampled_from(["system", "family", "n_items", "config", "aggregator", None]))
def test_protocol_descriptions_parse_or_refuse(value, key):
    doc = INFOS[0].to_json()
    if key is None:
        doc = value
    else:
        doc[key] = value
    try:
        info = ProtocolInfo.from_json(doc)
    except DprecError:
        return
    assert isinstance(info.n_items, int) and info.family in ("fmf", "dplcf")


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.dictionaries(st.sampled_from(["bit_generator", "state", "inc", "has_uint32",
                                        "uinteger", "other"]), json_values, max_size=6)
       | json_values)
def test_generator_states_parse_or_refuse(doc):
    try:
        g = generator_from_json(doc)
    except DprecError:
        return
    assert isinstance(g, np.random.Generator)
    g.random()


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.none() | st.text(max_size=40))
def test_authorization_headers(header):
    out = bearer(header)
    assert out is None or (out and header is not None and out in header)
