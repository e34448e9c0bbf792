"""What a terminal or MCP episode costs besides the model: image lookup, container start,
setup (MCP: starting the service and its server), grading, removal; and what the grading
integrity protections cost a terminal episode (the toolchain's baseline in setup, the
audit and the traced test run in grading) against the same episode unprotected.

Run: .venv/bin/python bench/task_overhead.py [--repeats 5]

Prints median seconds per phase over the repeats and ratios measured in this run:
a cached image lookup against a cold build of the same context, each phase against the
container start (the unit every episode pays once), and the protected terminal episode's
setup + grade against the unprotected one's (the runs alternate, so load falls on both).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from gem_eval import make
from gem_eval.sandbox import docker_client
from gem_eval.sandbox.factory import make_sandbox, resolve_image
from gem_eval.tools.kit import build_kit

ROOT = Path(__file__).resolve().parents[1]
BASE = str(ROOT / "tasks" / "terminal" / "base")
TERMINAL = ROOT / "tests" / "fixtures" / "terminal" / "tb2-count-words"
MCP_TASKS = {
    "filesystem": ROOT / "tasks" / "mcp" / "filesystem" / "messy_project" / "update_config",
    "postgres": next((ROOT / "tasks" / "mcp" / "postgres").glob("*/*/verify.py")).parent,
}


class BenchError(Exception):
    """The episodes did not do the intended work: no figure is printed."""


async def episode(env_id: str, path: Path, **kwargs: object) -> dict[str, float]:
    """One episode's phases (the oracle acts; its own time is reported as ``solve``)."""
    times: dict[str, float] = {}
    env = make(env_id, path=str(path), **kwargs)
    hosted = env.unwrapped
    began = time.perf_counter()
    resources = hosted.resources()  # type: ignore[attr-defined]
    spec = resolve_image(resources.sandbox)
    times["image lookup"] = time.perf_counter() - began
    sandbox = make_sandbox(spec, run_id=f"bench-{uuid.uuid4().hex[:6]}")
    began = time.perf_counter()
    await sandbox.start()
    times["container start"] = time.perf_counter() - began
    try:
        hosted.attach_sandbox(sandbox)  # type: ignore[attr-defined]
        began = time.perf_counter()
        await hosted.asetup(sandbox)  # type: ignore[attr-defined]
        kits = [build_kit(t.name, t.settings) for t in resources.tools]
        opened = [(kit, await kit.open(sandbox)) for kit in kits]
        await hosted.aready()  # type: ignore[attr-defined]
        times["setup + tools open"] = time.perf_counter() - began
        began = time.perf_counter()
        await hosted.asolve()  # type: ignore[attr-defined]
        times["solve (oracle)"] = time.perf_counter() - began
        began = time.perf_counter()
        reward, info = await hosted.afinish()  # type: ignore[attr-defined]
        times["grade"] = time.perf_counter() - began
        if reward != 1.0:
            raise BenchError(f"{path}: the oracle scored {reward}")
        protected = kwargs.get("protect_verifier", True)
        if env_id.startswith("terminal:") and protected != info["audit"].endswith("traced)"):
            raise BenchError(f"{path}: audit {info['audit']!r} with protect_verifier={protected}")
        for kit, tools in opened:
            await kit.release(tools)
            await kit.aclose()
    finally:
        began = time.perf_counter()
        await sandbox.close()
        times["container removal"] = time.perf_counter() - began
    return times


def cold_build_ratio() -> tuple[float, float]:
    """Seconds of a cold build of the terminal fixture's context and of a cached lookup."""
    with tempfile.TemporaryDirectory() as tmp:
        context = Path(tmp) / "ctx"
        shutil.copytree(TERMINAL / "environment", context)
        (context / "nonce").write_text(uuid.uuid4().hex)  # a context Docker never saw
        env = make("terminal:Task-v0", path=str(TERMINAL), image_map={"python:3*": BASE})
        spec = env.unwrapped.resources().sandbox.model_copy(update={"build": str(context)})  # type: ignore[attr-defined]
        began = time.perf_counter()
        tag = resolve_image(spec).image
        cold = time.perf_counter() - began
        began = time.perf_counter()
        resolve_image(spec)
        cached = time.perf_counter() - began
        if tag is None:
            raise BenchError("the cold build produced no image")
        docker_client.client().images.remove(tag, force=True)
    return cold, cached


def report(name: str, runs: list[dict[str, float]]) -> None:
    medians = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    start = medians["container start"]
    print(f"\n{name} ({len(runs)} episodes, median seconds; x = / container start)")
    for phase, seconds in medians.items():
        print(f"  {phase:22s} {seconds:7.3f}  x{seconds / start:5.2f}")


def protection_cost(protected: list[dict[str, float]], bare: list[dict[str, float]]) -> str:
    """The grading protections' cost: setup + grade, protected against unprotected."""

    def work(runs: list[dict[str, float]]) -> float:
        return statistics.median(r["setup + tools open"] + r["grade"] for r in runs)

    def episode_total(runs: list[dict[str, float]]) -> float:
        return statistics.median(sum(r.values()) for r in runs)

    extra = work(protected) - work(bare)
    return (
        f"\nprotections (baseline + audit + traced tests): setup + grade x"
        f"{work(protected) / work(bare):.2f} the unprotected ({extra:+.2f} s per episode); "
        f"whole episode x{episode_total(protected) / episode_total(bare):.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    cold, cached = cold_build_ratio()
    print(
        f"task image: cold build {cold:.2f} s, cached lookup {cached:.3f} s: x{cold / cached:.0f}"
    )
    terminal: list[dict[str, float]] = []
    unprotected: list[dict[str, float]] = []
    for _ in range(args.repeats):
        for runs, protect in ((terminal, True), (unprotected, False)):
            runs.append(
                asyncio.run(
                    episode(
                        "terminal:Task-v0",
                        TERMINAL,
                        image_map={"python:3*": BASE},
                        protect_verifier=protect,
                    )
                )
            )
    report("terminal (TB2 fixture)", terminal)
    report("terminal, unprotected (no baseline, audit or trace)", unprotected)
    print(protection_cost(terminal, unprotected))
    for service, path in MCP_TASKS.items():
        runs = [asyncio.run(episode("mcp:Task-v0", path)) for _ in range(args.repeats)]
        report(f"mcp {service} ({path.parent.name}/{path.name})", runs)


if __name__ == "__main__":
    try:
        main()
    except BenchError as exc:
        sys.exit(f"bench: no figures: {exc}")
