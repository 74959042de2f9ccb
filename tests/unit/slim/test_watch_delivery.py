"""A watcher keeps up with a burst of writes: the events queued for it go out in one turn of the event
loop, not one turn each (which let 16 concurrent writers run ahead of every watcher by the whole burst)."""

from __future__ import annotations

import asyncio

from planner.slim.api import Api, WatchOptions
from planner.slim.bootstrap import seed
from planner.slim.resources import by_kind
from planner.slim.store import Store

BURST = 50


async def _turns_to_receive(api: Api, stream_count: int) -> tuple[list[str], int]:
    config_maps = by_kind("ConfigMap")
    options = WatchOptions(resource_version=str(api.store.revision))
    stream = api.watch(config_maps, "default", options)
    for index in range(stream_count):
        api.create(config_maps, "default", {"metadata": {"name": f"burst-{index}"}})
    turns, received = 0, []
    done = asyncio.Event()

    async def count_turns() -> None:
        nonlocal turns
        while not done.is_set():
            turns += 1
            await asyncio.sleep(0)

    counter = asyncio.create_task(count_turns())
    async for event in stream:
        received.append(event["object"]["metadata"]["name"])
        if len(received) == stream_count:
            break
    done.set()
    await counter
    return received, turns


def test_queued_events_reach_the_watcher_in_one_loop_turn() -> None:
    api = Api(Store(None))
    seed(api)
    received, turns = asyncio.run(_turns_to_receive(api, BURST))
    assert received == [f"burst-{index}" for index in range(BURST)]
    assert turns <= 2  # one turn per event would be 50 or more


async def _to_the_timeout(api: Api) -> list[tuple[str, str]]:
    """A watch whose timeout passes while a burst is still queued for it: what it sent, as (type, rv)."""
    config_maps = by_kind("ConfigMap")
    options = WatchOptions(
        resource_version=str(api.store.revision), timeout_seconds=0.2, allow_bookmarks=True
    )
    stream = api.watch(config_maps, "default", options)
    for index in range(3):
        api.create(config_maps, "default", {"metadata": {"name": f"late-{index}"}})
    sent = []
    async for event in stream:
        sent.append((event["type"], event["object"]["metadata"]["resourceVersion"]))
        await asyncio.sleep(0.3)  # a slow reader: the deadline passes with two events still queued
    return sent


def test_the_last_bookmark_never_claims_events_it_did_not_send() -> None:
    """A client resumes from a bookmark's revision: one past a queued event would lose it for good (an
    informer's cache then never saw a Deployment become available)."""
    api = Api(Store(None))
    seed(api)
    first = api.store.revision + 1
    assert asyncio.run(_to_the_timeout(api)) == [("ADDED", str(first)), ("BOOKMARK", str(first))]
