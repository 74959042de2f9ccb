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
