"""The pi connection hands out frames already read without waiting (the driver loop's fast path)."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from anyagent.process import spawn
from anyagent_pi.connection import Connection

pytestmark = pytest.mark.anyio

_WRITER = (  # three frames in one write
    'import sys; sys.stdout.write(\'\'.join(\'{"type":"x","k":%d}\\n\' % k for k in range(3)))'
)


async def test_receive_nowait_hands_out_the_backlog_then_buffered_frames(tmp_path: Path) -> None:
    """Fails before: ``Connection`` had no ``receive_nowait``, so each frame took an awaited read."""
    process = await spawn([sys.executable, "-c", _WRITER], cwd=tmp_path)
    connection = Connection(process)
    try:
        connection.backlog.append({"type": "early"})
        assert connection.receive_nowait() == {"type": "early"}
        with pytest.raises(anyio.WouldBlock):
            connection.receive_nowait()
        first = await connection.receive()  # one read takes the whole burst
        rest = [connection.receive_nowait(), connection.receive_nowait()]
        assert [first, *rest] == [{"type": "x", "k": k} for k in range(3)]
        with pytest.raises(anyio.WouldBlock):
            connection.receive_nowait()
    finally:
        await connection.close(grace=0.5)
