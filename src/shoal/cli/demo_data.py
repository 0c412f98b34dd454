"""The demo's event stream: orders of a web shop, with late-arriving events.

Each order produces up to three events, ``created``, ``paid`` and ``shipped``, each a
row keyed by the order (``dt`` is the day the order was created). Most events arrive
within a few minutes of their event time; a few are held back on devices that were
offline and arrive in bursts one to three hours late. The arrival time puts each
event into a micro-batch; events that would arrive after the simulated run are left
out. Everything follows from the seed.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import pyarrow as pa

SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), nullable=False),
        pa.field("order_id", pa.int64(), nullable=False),
        ("user_id", pa.int64()),
        ("status", pa.string()),
        ("amount", pa.float64()),
        ("event_time", pa.timestamp("ms")),
    ]
)
PARTITION_KEYS = ("dt",)
PRIMARY_KEYS = ("dt", "order_id")
EVENT_TIME = "event_time"

# The share of events that a device holds back until the next late burst.
LATE_SHARE = 0.05
LATE_MIN = timedelta(hours=1)
LATE_MAX = timedelta(hours=3)
BURSTS_AT = (0.4, 0.75)  # fractions of the run at which held-back events arrive


@dataclass(frozen=True, slots=True)
class StreamConfig:
    events: int
    start: datetime  # naive UTC
    hours: int
    batch_minutes: int
    seed: int

    @property
    def end(self) -> datetime:
        return self.start + timedelta(hours=self.hours)

    @property
    def batch(self) -> timedelta:
        return timedelta(minutes=self.batch_minutes)

    @property
    def batch_count(self) -> int:
        return -(-self.hours * 60 // self.batch_minutes)


@dataclass(frozen=True, slots=True)
class Event:
    dt: str
    order_id: int
    user_id: int
    status: str
    amount: float
    event_time: datetime
    arrival: datetime
    late: bool


@dataclass(frozen=True, slots=True)
class MicroBatch:
    """The events that arrive in ``[start, end)`` of simulated time."""

    index: int
    start: datetime
    end: datetime
    events: tuple[Event, ...]

    @property
    def late_count(self) -> int:
        return sum(e.late for e in self.events)

    def to_arrow(self) -> pa.Table:
        return pa.Table.from_pylist(
            [
                {
                    "dt": e.dt,
                    "order_id": e.order_id,
                    "user_id": e.user_id,
                    "status": e.status,
                    "amount": e.amount,
                    "event_time": e.event_time,
                }
                for e in self.events
            ],
            schema=SCHEMA,
        )

    def write_json(self, folder: Path) -> Path:
        """The batch as a JSON-lines file in ``folder``, as a collector would land it."""
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"orders-{self.index:04d}.json"
        with path.open("w", encoding="utf-8") as out:
            for e in self.events:
                record = {
                    "dt": e.dt,
                    "order_id": e.order_id,
                    "user_id": e.user_id,
                    "status": e.status,
                    "amount": e.amount,
                    "event_time": e.event_time.isoformat(timespec="milliseconds"),
                }
                out.write(json.dumps(record) + "\n")
        return path


def _bursts(config: StreamConfig) -> list[datetime]:
    """Times of the late bursts, on batch boundaries."""
    out = []
    for fraction in BURSTS_AT:
        index = max(1, round(config.batch_count * fraction))
        out.append(config.start + index * config.batch + timedelta(seconds=30))
    return out


def _arrival(
    rng: random.Random, event_time: datetime, bursts: Sequence[datetime]
) -> tuple[datetime, bool]:
    if rng.random() < LATE_SHARE:
        for burst in bursts:
            if burst - LATE_MAX <= event_time < burst - LATE_MIN:
                return burst + timedelta(seconds=rng.uniform(0, 120)), True
    delay = min(rng.expovariate(1 / 60), 300.0)  # seconds: one minute on average
    return event_time + timedelta(seconds=delay), False


def generate(config: StreamConfig) -> list[MicroBatch]:
    """The micro-batches of the run, each with the events arriving in its window."""
    rng = random.Random(config.seed)
    bursts = _bursts(config)
    orders = max(1, config.events * 10 // 26)  # created + 0.9 paid + 0.7 shipped per order
    span = (config.end - config.start).total_seconds()
    events: list[Event] = []
    for n in range(orders):
        created = config.start + timedelta(seconds=rng.uniform(0, span))
        created = created.replace(microsecond=created.microsecond // 1000 * 1000)
        order_id = 100_000 + n
        user_id = rng.randrange(1, 2_000)
        amount = round(rng.lognormvariate(3.5, 0.8), 2)
        dt = created.strftime("%Y-%m-%d")
        times = [("created", created)]
        if rng.random() < 0.9:
            paid = created + timedelta(seconds=rng.uniform(60, 1200))
            times.append(("paid", paid))
            if rng.random() < 0.78:
                times.append(("shipped", paid + timedelta(seconds=rng.uniform(1200, 7200))))
        for status, when in times:
            when = when.replace(microsecond=when.microsecond // 1000 * 1000)
            arrival, late = _arrival(rng, when, bursts)
            if arrival < config.end:
                events.append(Event(dt, order_id, user_id, status, amount, when, arrival, late))
    events.sort(key=lambda e: (e.arrival, e.order_id))
    batches: list[MicroBatch] = []
    for i in range(config.batch_count):
        start = config.start + i * config.batch
        end = min(start + config.batch, config.end)
        inside = tuple(e for e in events if start <= e.arrival < end)
        batches.append(MicroBatch(i + 1, start, end, inside))
    return batches
