"""The same two graphs as benches/graph.rs, on the Python original (deepharness==0.2.0).

Run by `cargo xtask bench graph`, which installs the package into target/peers/bench-py.
Prints one line per graph: `<name> <mean seconds per run> <node runs per run>`.
"""

from __future__ import annotations

import asyncio
import sys
import time
from dataclasses import dataclass, field

from deepharness.graph import Graph, concat

WIDTH = 1000
ITERATIONS = 10_000


@dataclass
class FanState:
    hits: list[int] = field(default_factory=list, metadata={"reducer": concat})
    joined: int = 0


@dataclass
class LoopState:
    count: int = 0


def fan_out_fan_in():
    g = Graph(FanState)

    @g.add(start=True)
    async def start(s):
        return s

    @g.add(end=True)
    async def join(s):
        s.joined = len(s.hits)
        return s

    for i in range(WIDTH):

        async def branch(s, hit=i):
            s.hits.append(hit)
            return s

        g.add(name=f"branch_{i}")(branch)
        g.connect("start", f"branch_{i}")
        g.connect(f"branch_{i}", "join")
    return g.build()


def counting_loop():
    g = Graph(LoopState)

    @g.add(start=True, end=True)
    async def step(s):
        s.count += 1
        return s

    def below_limit(s):
        return s.count < ITERATIONS

    g.connect(step, step, condition=below_limit, loop=True)
    return g.build()


async def measure(name, run, nodes, check, budget):
    check(await run())  # warm up, and prove the graph does what the Rust one does
    runs, started = 0, time.perf_counter()
    while True:
        await run()
        runs += 1
        elapsed = time.perf_counter() - started
        if elapsed >= budget and runs >= 3:
            break
    print(f"{name} {elapsed / runs:.9f} {nodes}", flush=True)


async def main(budget: float) -> None:
    fan = fan_out_fan_in()

    def fan_ok(s):
        assert s.joined == WIDTH, s.joined

    await measure("fan_out_fan_in_1000", lambda: fan.run(), WIDTH + 2, fan_ok, budget)

    looping = counting_loop()

    def loop_ok(s):
        assert s.count == ITERATIONS, s.count

    # The original needs one step more than the waves it runs (the off-by-one the Rust
    # executor fixes), so give it room.
    await measure(
        "loop_10000",
        lambda: looping.run(LoopState(), max_steps=ITERATIONS + 1),
        ITERATIONS,
        loop_ok,
        budget,
    )


if __name__ == "__main__":
    asyncio.run(main(float(sys.argv[1]) if len(sys.argv) > 1 else 5.0))
