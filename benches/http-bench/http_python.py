"""The two-step run of src/client.rs on the Python original (deepharness==0.2.0).

Run by `cargo xtask bench http`, which installs the package into target/peers/bench-py and
starts the mock: `python http_python.py <mock base URL> <runs> [<cpu>]`, the CPU being the
one the mock is kept to (see `pin` in src/main.rs).

The original's Agent always streams the model (arun() is astream_events() keeping the last
event), so both of its paths send `"stream": true` and read the mock's SSE answers.

Prints one line per path, as the Rust side does: `cpu <path> <CPU µs per run> <wall µs per
run> <runs>`, the median of ten rounds that take the two paths in turn, CPU being
time.process_time() (this process only, so the mock's work is not in it).
"""

from __future__ import annotations

import asyncio
import os
import sys
import time

from deepharness import Agent, Finished, OpenAI, TextDelta, tool

PROMPT = "What is the weather in Paris?"
ANSWER = "It is sunny in Paris, 22 °C, with a light breeze from the west."
WARM_UP = 100
ROUNDS = 10


@tool
async def get_weather(city: str) -> str:
    """Get the current weather in a city."""
    return f"Sunny, 22 °C in {city}."


async def arun(agent: Agent) -> None:
    state = await agent.arun(PROMPT)
    assert state.output == ANSWER, state.output


async def astream_events(agent: Agent) -> None:
    text, output = [], None
    async for event in agent.astream_events(PROMPT):
        if isinstance(event, TextDelta):
            text.append(event.text)
        elif isinstance(event, Finished):
            output = event.state.output
    assert "".join(text) == ANSWER == output, (text, output)


async def measure(url: str, runs: int, rounds: int) -> None:
    model = OpenAI("gpt-4o-mini", api_key="sk-bench", base_url=f"{url}/v1")
    agent = Agent(model, tools=[get_weather])
    paths = [("arun", arun), ("astream_events", astream_events)]
    for _, once in paths:
        for _ in range(WARM_UP):
            await once(agent)
    per_round = max(1, -(-runs // rounds))
    cpu = {name: [] for name, _ in paths}
    wall = {name: [] for name, _ in paths}
    # The paths take turns, round by round, as the Rust cases do.
    for _ in range(rounds):
        for name, once in paths:
            cpu_start, wall_start = time.process_time(), time.perf_counter()
            for _ in range(per_round):
                await once(agent)
            cpu[name].append((time.process_time() - cpu_start) * 1e6 / per_round)
            wall[name].append((time.perf_counter() - wall_start) * 1e6 / per_round)
    for name, _ in paths:
        mid = rounds // 2
        print(
            f"cpu {name} {sorted(cpu[name])[mid]:.2f} {sorted(wall[name])[mid]:.2f} "
            f"{per_round * rounds}",
            flush=True,
        )
    await model.aclose()


if __name__ == "__main__":
    if len(sys.argv) > 3:
        os.sched_setaffinity(0, {int(sys.argv[3])})
    asyncio.run(
        measure(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 2000, ROUNDS)
    )
