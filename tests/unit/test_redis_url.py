"""A Redis URL with options redis-py refuses is one line at start (issue 64,
point 11), never a traceback at the first command; the line holds no part
of the URL (it may carry a password)."""

from __future__ import annotations

import pytest

from laurels.board.connection import BadRedisUrl, UnsupportedRedis, connect

BAD = ["rediss://:pw-secret@127.0.0.1:1/0?ssl_cert_reqs=bogus",
       "redis://:pw-secret@127.0.0.1:1/0?socket_timeout=soon",
       "ftp://:pw-secret@127.0.0.1:1/0"]


@pytest.mark.parametrize("url", BAD)
@pytest.mark.parametrize("cluster", [False, True])
def test_a_refused_url_is_one_line_without_the_url(url: str, cluster: bool) -> None:
    with pytest.raises(BadRedisUrl) as refused:
        connect(url, cluster)
    line = str(refused.value)
    assert isinstance(refused.value, UnsupportedRedis)  # every start refuses it so
    assert line.startswith("LAURELS_REDIS_URL is refused: ") and "\n" not in line
    assert "pw-secret" not in line and "127.0.0.1" not in line


def test_good_urls_still_connect_lazily() -> None:
    for url in ("redis://127.0.0.1:1/0", "rediss://127.0.0.1:1/0?ssl_cert_reqs=none",
                "unix:///tmp/nowhere.sock"):
        connect(url, False)  # no server there: nothing is sent yet
    connect("redis://127.0.0.1:1/0", True)
