import numpy as np
import pytest

from dprec.distributed.layout import BlockLayout, block_hash
from dprec.errors import DprecError
from dprec.protocol.sharding import block_generator


def test_blocks_cover_every_client_once_for_any_shard_count():
    layout = BlockLayout(10_000, 512)
    assert layout.n_blocks == 20
    for shards in (1, 2, 3, 7, 40):
        parts = layout.shard_blocks(shards)
        assert len(parts) == shards
        users = np.concatenate([layout.users(b) for b in parts])
        assert np.array_equal(np.sort(users), np.arange(10_000))


def test_a_block_goes_to_the_shard_its_hash_names():
    layout = BlockLayout(5_000, 100)
    parts = layout.shard_blocks(3)
    h = block_hash(np.arange(layout.n_blocks)) % np.uint64(3)
    for s, blocks in enumerate(parts):
        assert np.all(h[blocks] == s)
    # the hash spreads consecutive blocks: no shard gets them all
    assert max(len(b) for b in parts) < layout.n_blocks


def test_spans_follow_the_users_order():
    layout = BlockLayout(1_100, 500)
    blocks = np.array([0, 2])
    users = layout.users(blocks)
    spans = layout.spans(blocks)
    assert spans == [(0, 0, 500), (2, 500, 600)]
    assert np.array_equal(users[500:600], np.arange(1000, 1100))


def test_block_streams_depend_on_key_round_and_block_only():
    a = block_generator(11, 2, 5).random(4)
    assert np.array_equal(a, block_generator(11, 2, 5).random(4))
    for other in ((12, 2, 5), (11, 3, 5), (11, 2, 6)):
        assert not np.array_equal(a, block_generator(*other).random(4))


def test_bad_layouts_are_refused():
    with pytest.raises(DprecError, match="block_size"):
        BlockLayout(10, 0)
    with pytest.raises(DprecError, match="shards"):
        BlockLayout(10, 4).shard_blocks(0)
