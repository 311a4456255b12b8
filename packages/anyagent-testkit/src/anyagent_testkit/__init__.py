"""anyagent-testkit: what adapter authors test with.

* ``anyagent_testkit.replay`` — the recording replayer (a fake agent process that plays a wire
  recording; ``python -m anyagent_testkit.replay``).
* ``anyagent_testkit.fakemodel`` — the loopback fake model server (Anthropic Messages, OpenAI
  Responses and Chat Completions, Gemini; ``python -m anyagent_testkit.fakemodel``).
* ``anyagent_testkit.live`` — the live tier: pinned agent CLIs from npm, isolated environments
  wired to the fake model, launched with the installed adapter packages' profile args.
* ``anyagent_testkit.stdio`` — ``JsonlProcess``, a raw JSON-lines client for an agent process.
* ``anyagent_testkit.events`` — ``EventReader`` (a session's events, every wait bounded), ``kinds``,
  ``text_of``, ``without_status``.
* ``anyagent_testkit.pytest_plugin`` — the ``--live`` option, the ``live`` marker and fixtures
  (loaded automatically through the ``pytest11`` entry point).
* ``anyagent_testkit.conformance`` — the adapter conformance suite.

The package root imports nothing heavy, so the replayer starts quickly.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
