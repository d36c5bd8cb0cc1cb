"""What a server's connections share (api/server.py, `Served`): response
heads held until their body joins them in one write (or the turn ends),
released by one callback a turn, and request-head deadlines swept by one
timer, not one timer a request (issue 45). The end-to-end limits are in
tests/faults/test_connections.py."""

from __future__ import annotations

import asyncio
from typing import Any

from laurels.api.server import HEAD_SWEEP_SECONDS, Corked, Served

HEAD = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n"


class Transport:
    """Records what reaches the socket, one entry a write."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True


class Late:
    """A connection as the sweep sees it: closed for a late head."""

    def __init__(self) -> None:
        self.reasons: list[str] = []
        self.closed = asyncio.Event()

    def _close(self, reason: str) -> None:
        self.reasons.append(reason)
        self.closed.set()


def corked(served: Served) -> tuple[Corked, Transport]:
    transport = Transport()
    return Corked(transport, served), transport  # type: ignore[arg-type]


async def test_a_head_and_its_body_go_in_one_write_and_a_lone_head_at_the_turns_end() -> None:
    served = Served(asyncio.get_running_loop())
    answered, a = corked(served)
    streaming, b = corked(served)
    answered.write(HEAD)
    answered.write(b"{}")
    streaming.write(HEAD)  # a live stream's head: no body this turn
    assert a.writes == [HEAD + b"{}"]
    assert b.writes == []
    await asyncio.sleep(0)  # the turn ends
    assert b.writes == [HEAD]
    streaming.write(b"data: x\n\n")
    assert b.writes == [HEAD, b"data: x\n\n"]
    assert served.held == []


async def test_many_held_heads_take_one_callback_a_turn() -> None:
    loop = asyncio.get_running_loop()
    served = Served(loop)
    scheduled: list[Any] = []
    call_soon = loop.call_soon

    def counting(callback: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(callback, "__self__", None) is served:
            scheduled.append(callback)
        return call_soon(callback, *args, **kwargs)

    loop.call_soon = counting  # type: ignore[method-assign]
    try:
        pairs = [corked(served) for _ in range(50)]
        for c, _ in pairs:
            c.write(HEAD)
        assert len(scheduled) == 1
        await asyncio.sleep(0)
        assert all(t.writes == [HEAD] for _, t in pairs)
    finally:
        loop.call_soon = call_soon  # type: ignore[method-assign]


async def test_a_100_continue_and_a_closing_connection_hold_nothing() -> None:
    served = Served(asyncio.get_running_loop())
    c, t = corked(served)
    c.write(b"HTTP/1.1 100 Continue\r\n\r\n")
    assert t.writes == [b"HTTP/1.1 100 Continue\r\n\r\n"]
    c.write(HEAD)
    c.close()  # what is held goes first
    assert t.writes[-1] == HEAD and t.closed
    assert c.is_closing()


async def test_late_heads_are_closed_by_one_sweeping_timer() -> None:
    served = Served(asyncio.get_running_loop())
    late, on_time, quick = Late(), Late(), Late()
    served.arm(late, 0.05)  # type: ignore[arg-type]
    served.arm(on_time, 0.05)  # type: ignore[arg-type]
    served.arm(quick, 30)  # type: ignore[arg-type]
    sweeper = served.sweeper
    assert sweeper is not None
    served.arm(late, 30)  # type: ignore[arg-type]  # (a deadline is kept from its first arming)
    assert served.sweeper is sweeper  # one timer for all of them
    served.disarm(on_time)  # type: ignore[arg-type]  # its head came in time
    async with asyncio.timeout(10 * HEAD_SWEEP_SECONDS + 1):
        await late.closed.wait()
    # The sweep that closed `late` saw `on_time` too (the same deadline): not due.
    assert late.reasons == ["header_timeout"]
    assert on_time.reasons == [] and quick.reasons == []
    assert list(served.due) == [quick] and served.sweeper is not None
    served.disarm(quick)  # type: ignore[arg-type]
    async with asyncio.timeout(10 * HEAD_SWEEP_SECONDS + 1):
        while served.sweeper is not None:  # the next sweep finds nothing due
            await asyncio.sleep(HEAD_SWEEP_SECONDS / 5)
    assert quick.reasons == []
