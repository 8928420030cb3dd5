"""Fakes of sitelore's ports for tests: a clock that never sleeps, a scripted resolver."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta


class FakeClock:
    """A clock whose ``sleep`` advances time instantly and records every wait."""

    def __init__(self, start: float = 1000.0) -> None:
        self.time = start
        self.sleeps: list[float] = []
        self._epoch = datetime(2026, 1, 1, tzinfo=UTC)

    def monotonic(self) -> float:
        return self.time

    def now(self) -> datetime:
        return self._epoch + timedelta(seconds=self.time)

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.time += max(0.0, seconds)
        await asyncio.sleep(0)

    def advance(self, seconds: float) -> None:
        self.time += seconds


class FakeResolver:
    """Answers from a table; a list of answers per host is served one call at a time.

    ``FakeResolver({"evil.test": [["93.184.216.34"], ["127.0.0.1"]]})`` answers the
    public address on the first lookup and loopback on the second (DNS rebinding).
    A host missing from the table raises ``OSError`` like a failed lookup.
    """

    def __init__(self, table: Mapping[str, Sequence[Iterable[str]] | Iterable[str]]) -> None:
        self._answers: dict[str, list[list[str]]] = {}
        for host, answers in table.items():
            answers = list(answers)
            if answers and isinstance(answers[0], str):
                self._answers[host] = [[str(a) for a in answers]]
            else:
                self._answers[host] = [list(a) for a in answers]
        self.calls: list[tuple[str, int]] = []

    async def resolve(self, host: str, port: int) -> Sequence[str]:
        self.calls.append((host, port))
        answers = self._answers.get(host)
        if not answers:
            raise OSError(f"no such host: {host}")
        return answers.pop(0) if len(answers) > 1 else answers[0]
