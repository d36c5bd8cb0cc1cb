"""Redis key names: one hash tag per season (cluster-safe)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from laurels.board.keys import CHUNK_BITS, ChunkBits, Keys, chunk_of
from tests import deadlines

pytestmark = pytest.mark.once

TAG = "{weekly:2026-W49}"


def _all_keys(keys: Keys, season: str) -> list[str]:
    sk = keys.season(season)
    v = sk.version("7")
    return [sk.current, sk.building, sk.next_version, sk.versions, sk.erased, sk.notify_stream,
            v.public, v.hidden, v.users, v.chunks, v.applied(0), v.applied(12345),
            v.applied_prefix, v.corrections]


def _hash_tag(key: str) -> str:
    """The part Redis Cluster hashes: between the first '{' and the next '}'."""
    start = key.index("{")
    end = key.index("}", start + 1)
    return key[start + 1:end]


@pytest.mark.parametrize("policy", ["shared", "first"])
def test_every_season_key_has_tag_and_prefix(policy: str) -> None:
    keys = Keys("laurels", policy)
    all_keys = _all_keys(keys, "2026-W49")
    assert len(set(all_keys)) == len(all_keys)
    for k in all_keys:
        assert TAG in k, k
        assert k.startswith("laurels:"), k
        assert _hash_tag(k) == "weekly:2026-W49", k


def test_custom_prefix() -> None:
    for k in _all_keys(Keys("test-run.1", "first"), "2026-W49"):
        assert k.startswith("test-run.1:"), k
        assert TAG in k
    assert Keys("p", "shared").notification_channel().startswith("p:")
    assert Keys("p", "shared").hint_channel().startswith("p:")


def test_policy_is_part_of_board_names() -> None:
    shared = _all_keys(Keys("laurels", "shared"), "2026-W49")
    first = _all_keys(Keys("laurels", "first"), "2026-W49")
    assert set(shared).isdisjoint(first)
    # Hints are about seasons, whatever the policy: one channel.
    assert Keys("laurels", "shared").hint_channel() == Keys("laurels", "first").hint_channel()


def test_seasons_do_not_share_keys() -> None:
    a = _all_keys(Keys("laurels", "shared"), "2026-W49")
    b = _all_keys(Keys("laurels", "shared"), "2026-W50")
    assert set(a).isdisjoint(b)
    for k in b:
        assert "{weekly:2026-W50}" in k


def test_versions_differ() -> None:
    sk = Keys("laurels", "shared").season("2026-W49")
    v1, v2 = sk.version("1"), sk.version("2")
    assert v1.public != v2.public
    assert v1.applied(3) != v2.applied(3)
    assert v1.applied(3) == v1.applied_prefix + "3"
    assert v1.version == "1"


def test_chunk_of_examples() -> None:
    assert CHUNK_BITS == 16
    assert chunk_of(0) == (0, 0)
    assert chunk_of(1) == (0, 1)
    assert chunk_of(65535) == (0, 65535)
    assert chunk_of(65536) == (1, 0)
    assert chunk_of(65537) == (1, 1)
    assert chunk_of(3 * 65536 + 5) == (3, 5)
    assert chunk_of(2**63 - 1) == (2**47 - 1, 65535)


@settings(deadline=deadlines.PURE)
@given(seq=st.integers(min_value=0, max_value=2**63 - 1))
def test_chunk_of_property(seq: int) -> None:
    chunk, bit = chunk_of(seq)
    assert 0 <= bit < 2**CHUNK_BITS
    assert chunk * 2**CHUNK_BITS + bit == seq


@pytest.mark.parametrize(("season", "tag"), [
    ("2026-W49", "weekly:2026-W49"), ("2026-11-30", "day:2026-11-30"),
    ("2026-11", "month:2026-11"), ("all", "all")])
def test_each_period_has_its_own_hash_tag(season: str, tag: str) -> None:
    """Every key of one season in one slot, whatever its period; no two
    periods' seasons share keys."""
    keys = Keys("laurels", "first")
    assert {_hash_tag(k) for k in [*_all_keys(keys, season),
                                    keys.shard_hint_channel(season)]} == {tag}


def test_every_key_declares_what_it_holds_of_learners() -> None:
    """The erasure and visibility invariants read each key by what board/keys.py
    declares it holds: every key a SeasonKeys or a VersionKeys names is
    declared (a new one must say), and nothing else under the prefix is."""
    import dataclasses

    from laurels.board.keys import Keys, SeasonKeys

    keys = Keys("lau", "first")
    for season in ("2026-W49", "2026-11-30", "2026-11", "all"):
        sk = keys.season(season)
        names = [getattr(sk, p) for p, v in vars(SeasonKeys).items() if isinstance(v, property)]
        vk = sk.version("12")
        names += [getattr(vk, f.name) for f in dataclasses.fields(vk)
                  if f.name not in ("version", "applied_prefix")]
        names += [vk.applied(3), vk.scratch(1)]
        for name in names:
            assert keys.holds(name) is not None, name
    assert keys.holds("lau:{all}:first:v1:unknown") is None
    assert keys.holds("other:{all}:first:current") is None
    assert keys.holds(keys.season("all").erased) == "tombstones"
    assert keys.holds(keys.season("all").version("1").hidden) == "learners"


@settings(deadline=deadlines.PURE)
@given(st.sampled_from([8, CHUNK_BITS]),
       st.sets(st.integers(1, 1 << 20), max_size=300), st.integers(1, 60))
def test_chunk_bits_marks_every_seq_whatever_the_fetches(width: int, seqs: set[int],
                                                         fetch: int) -> None:
    """A rebuild's bitmaps (projection/rebuild.py, _merge_bits): the ascending seqs fed
    a fetch at a time give each chunk once, its bits set as SETBIT would."""
    ordered = sorted(seqs)
    chunker = ChunkBits(width)
    chunks: list[tuple[int, bytes]] = []
    for i in range(0, len(ordered), fetch):
        chunks += chunker.add_many(ordered[i:i + fetch])
    if (last := chunker.rest()) is not None:
        chunks.append(last)
    assert [c for c, _ in chunks] == sorted({s >> width for s in ordered})
    marked = {(c << width) | (8 * i + j) for c, bitmap in chunks
              for i, byte in enumerate(bitmap) for j in range(8) if byte & (0x80 >> j)}
    assert marked == seqs
    assert all(len(bitmap) == (1 << width) // 8 for _, bitmap in chunks)
