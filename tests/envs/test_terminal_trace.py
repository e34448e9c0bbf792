"""The test run's trace and its verdict: the tracer's output read, each finding judged
(without Docker: the image's files are stand-ins), and the tracer itself in a real
container (marked docker)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from gem_eval.envs.terminal import audit, loads
from gem_eval.envs.terminal.layout import load_task
from gem_eval.envs.terminal.loads import Declared, is_code, judge
from gem_eval.envs.terminal.toolchain import Toolchain, parse
from gem_eval.envs.terminal.tracer import Finding, Report
from gem_eval.envs.terminal.tracer import parse as parse_trace

ROOT = Path(__file__).resolve().parents[2]
TB2 = ROOT / "tests" / "fixtures" / "terminal" / "tb2-count-words"
SITE = "/usr/local/lib/python3.11/dist-packages"
LIBS = "/usr/lib/x86_64-linux-gnu"


def test_the_tracers_output() -> None:
    output = (
        "T 100.000000001\n"
        "R\to\tbPE\t99.5\t/usr/local/lib/libx.so.1\t\n"
        "R\ts\t\t99.6\t/usr/local/bin/we\\x09ird\\x0aname\t/bin/true\n"
        "F\tuntraceable-abi 42\n"
        "E 0\n"
    )
    report = parse_trace(output)
    assert report.findings == [
        Finding("o", "bPE", 99.5, "/usr/local/lib/libx.so.1"),
        Finding("s", "", 99.6, "/usr/local/bin/we\tird\nname", "/bin/true"),
    ]
    assert report.failures == ["untraceable-abi 42"] and report.status == 0
    assert not report.cut and report.untraced is None
    # Too many findings, no end (killed), output cut by the exec's cap, a stray line.
    for broken in ("O\nE 0\n", "R\to\t\t1.0\t/x\t\n", "E 0\n[... 9 bytes cut ...]", "E 0\nhi\n"):
        assert parse_trace(broken).cut, broken
    assert parse_trace("F\tptrace 0\nE 0\n").untraced == "ptrace refused"


def test_what_is_code() -> None:
    def opened(path: str, flags: str = "") -> Finding:
        return Finding("o", flags, 1.0, path)

    assert is_code(opened("/x/libfoo.so.1.2")) and is_code(opened("/x/m.py"))
    assert is_code(opened("/x/hook.pth")) and is_code(opened("/opt/py/pyvenv.cfg"))
    assert is_code(opened("/x/blob", "E")) and is_code(opened("/x/script", "H"))
    assert not is_code(opened("/srv/data.csv", "P"))
    # A shell at its start-up: what it sources (no O_CLOEXEC) is code; what libc reads
    # for it (O_CLOEXEC: /etc/passwd, the loader's cache) is not; once it has read the
    # tests, a file it opens is a redirection's data.
    assert is_code(opened("/etc/bash_completion.d/extra", "aS"))
    assert not is_code(opened("/etc/passwd", "aSX"))
    assert not is_code(opened("/home/u/input.txt", "baS"))
    assert is_code(Finding("x", "", 1.0, "/usr/local/bin/tool"))


def toolchain() -> Toolchain:
    return Toolchain(
        environ={"PATH": "/usr/local/bin:/usr/bin:/bin"},
        sealed={"/usr/bin/python3", "/usr/lib/python3.11"},
        sites={SITE},
        modules={"json", "cmd", "pytest", "iniconfig"},
        listing={SITE, f"{SITE}/iniconfig", f"{SITE}/iniconfig/__init__.py"},
        programs={"python3", "sha256sum", "bash"},
        libraries={"libexpat.so.1", "libc.so.6"},
    )


class FakeSandbox:
    image = "gem-eval/task:test"
    container = object()


def verdict(
    findings: list[Finding],
    image: dict[str, Any],
    now: dict[str, Any] | None = None,
    monkeypatch: pytest.MonkeyPatch | None = None,
    task_dir: Path = TB2,
    **report: Any,
) -> tuple[list[str], list[str]]:
    """``judge`` with the image's entries (path -> entry) and the container's."""
    assert monkeypatch is not None

    async def pristine_entry(self: loads.Pristine, path: str) -> loads.Entry:
        return image.get(path)

    async def entry(container: Any, path: str) -> loads.Entry:
        return (now or {}).get(path)

    async def close(self: loads.Pristine) -> None:
        return None

    monkeypatch.setattr(loads.Pristine, "entry", pristine_entry)
    monkeypatch.setattr(loads.Pristine, "close", close)
    monkeypatch.setattr(loads, "_entry", entry)
    trace = Report(findings=findings, **{"status": 0, **report})
    sandbox: Any = FakeSandbox()
    return asyncio.run(judge(trace, toolchain(), load_task(task_dir), sandbox))


def test_new_code_is_tampering_when_it_takes_a_place_or_loads_at_start_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    findings = [
        Finding("o", "aE", 1.0, "/usr/local/lib/libexpat.so.1"),  # the image's soname
        Finding("o", "aE", 1.0, "/usr/local/lib/libexpaX.so.1"),  # at a start-up
        Finding("o", "baPE", 1.0, f"{LIBS}/ossl-modules/gem.so"),  # a plugin scan's find
        Finding("x", "ba", 1.0, "/usr/local/bin/sha256sum", ""),  # the image's program
        Finding("x", "", 1.0, "/usr/local/bin/early"),  # before the tests began
        Finding("s", "", 1.0, "/usr/local/bin/python3", "/bin/true"),
        Finding("o", "aS", 1.0, "/etc/bash_completion.d/extra"),  # sourced at start-up
    ]
    tampered, notes = verdict(findings, {}, monkeypatch=monkeypatch)
    assert tampered == [
        "added /etc/bash_completion.d/extra (loaded at a program's start-up)",
        f"added {LIBS}/ossl-modules/gem.so (a library loaded by the image's own code)",
        "added /usr/local/bin/early (run before the tests began)",
        "added /usr/local/bin/python3 (in place of the image's python3)",
        "added /usr/local/bin/sha256sum (in place of the image's sha256sum)",
        "added /usr/local/lib/libexpaX.so.1 (a library loaded by the image's own code)",
        "added /usr/local/lib/libexpat.so.1 (in place of the image's libexpat.so.1)",
    ]
    assert notes == []


def test_software_the_tests_ask_for_is_noted(monkeypatch: pytest.MonkeyPatch) -> None:
    findings = [
        Finding("x", "ba", 1.0, "/usr/local/bin/sha-of"),  # run by the tests
        Finding("o", "anSH", 1.0, "/usr/local/bin/sha-of"),  # read by its interpreter
        Finding("o", "anE", 1.0, f"{LIBS}/libnew.so.3"),  # loaded by a new program
        Finding("o", "banPE", 1.0, f"{LIBS}/libpq.so.5"),  # a new package's extension's
        Finding("o", "aP", 1.0, "/srv/report.csv"),  # data
    ]
    tampered, notes = verdict(findings, {}, monkeypatch=monkeypatch)
    assert tampered == []
    assert notes == [
        f"loaded {LIBS}/libnew.so.3 (new: installed by the agent)",
        f"loaded {LIBS}/libpq.so.5 (new: installed by the agent)",
        "loaded /usr/local/bin/sha-of (new: installed by the agent)",
        "ran /usr/local/bin/sha-of (new: installed by the agent)",
    ]


def test_a_file_the_image_had(monkeypatch: pytest.MonkeyPatch) -> None:
    image = {
        "/srv/site/deploy.sh": ("file", "aa"),
        "/usr/bin/tool": ("file", "bb"),
        "/usr/bin/vi": ("link", "/etc/alternatives/vi"),
    }
    now = {"/srv/site/deploy.sh": ("file", "aa"), "/usr/bin/tool": ("file", "cc")}
    findings = [
        Finding("x", "ba", 1.0, "/srv/site/deploy.sh"),  # chmod, chown: same content
        Finding("x", "ba", 1.0, "/usr/bin/tool"),
        Finding("s", "ba", 1.0, "/usr/bin/vi", "/tmp/evil"),
    ]
    tampered, notes = verdict(findings, image, now, monkeypatch=monkeypatch)
    assert tampered == ["changed /usr/bin/tool", "changed /usr/bin/vi"]
    assert notes == ["ran /srv/site/deploy.sh (its mode or owner changed, not its content)"]


def test_site_packages(monkeypatch: pytest.MonkeyPatch) -> None:
    findings = [
        Finding("p", "baC", 1.0, f"{SITE}/requests", f"{SITE}/requests/__init__.py"),
        Finding("p", "D", 1.0, f"{SITE}/requests-2.0.dist-info", "METADATA"),  # data
        Finding("p", "C", 1.0, f"{SITE}/apport_python_hook.py", ""),  # at start-up
        Finding("p", "nC", 1.0, f"{SITE}/mytool", ""),  # by a program the agent wrote
        Finding("p", "baC", 1.0, f"{SITE}/zz.pth", ""),
        Finding("p", "baC", 1.0, f"{SITE}/json", ""),  # shadows the standard library
        Finding("p", "baC", 1.0, f"{SITE}/iniconfig", f"{SITE}/iniconfig/x.py"),
    ]
    tampered, _ = verdict(findings, {}, monkeypatch=monkeypatch)
    assert tampered == [
        f"added {SITE}/apport_python_hook.py (imported at a program's start-up)",
        f"added {SITE}/json (in place of the module json)",
        f"added {SITE}/zz.pth (a start-up hook)",
        f"changed {SITE}/iniconfig/x.py (in {SITE}/iniconfig, which the image had)",
    ]


def test_the_work_product(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import shutil

    task = tmp_path / "task"
    shutil.copytree(TB2, task)
    text = (task / "instruction.md").read_text()
    (task / "instruction.md").write_text(
        text + "\nFix the tool in /opt/tool (/opt/tool/run.py) and /usr/bin/report.\n"
    )
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace("[verifier]", '[verifier]\naudit_exclude = ["/x"]'))
    image = {"/opt/tool/run.py": ("file", "aa"), "/usr/bin/report": ("file", "bb")}
    findings = [
        Finding("o", "bP", 1.0, "/app/cmd.py"),  # takes the module cmd's place
        Finding("o", "bP", 1.0, "/app/solution.py"),
        Finding("o", "aP", 1.0, "/opt/tool/run.py"),  # changed, named by the task
        Finding("o", "aP", 1.0, "/opt/tool/helpers.py"),  # new, in the named directory
        Finding("x", "ba", 1.0, "/usr/bin/report"),
        Finding("o", "aE", 1.0, "/x/libexpat.so.1"),  # excluded by the task
    ]
    now = {"/opt/tool/run.py": ("file", "cc"), "/usr/bin/report": ("file", "dd")}
    tampered, notes = verdict(findings, image, now, monkeypatch=monkeypatch, task_dir=task)
    assert tampered == ["added /app/cmd.py (in place of the module cmd)"]
    assert notes == [
        "loaded /opt/tool/helpers.py (new: the task names it)",
        "loaded /opt/tool/run.py (changed: the task names it)",
        "ran /usr/bin/report (changed: the task names it)",
    ]
    declared = Declared(load_task(task), toolchain())
    assert "/opt/tool/x" in declared and "/usr/bin/report" in declared
    assert "/usr/bin/other" not in declared  # /usr/bin is searched: only what is named


def test_what_the_trace_could_not_see(monkeypatch: pytest.MonkeyPatch) -> None:
    tampered, _ = verdict([], {}, monkeypatch=monkeypatch, cut=True)
    assert tampered == ["the trace was cut (too many files the agent wrote, or stopped)"]
    tampered, _ = verdict([], {}, monkeypatch=monkeypatch, failures=["untraceable-abi 7"])
    assert tampered == ["the trace could not follow a process (untraceable-abi 7)"]
    tampered, notes = verdict([], {}, monkeypatch=monkeypatch, failures=["ptrace 0"])
    assert tampered == [] and notes == ["not traced: ptrace refused"]


def test_the_probes_names_and_the_loaders_notes() -> None:
    found = parse(
        "program python3\nprogram ls\nlibrary libc.so.6\nnoted /etc/ld.so.cache\n"
        "noted /etc/ld.so.conf.d\nsealed /usr/bin/python3\n"
        "links /usr/bin/dash libc.so.6 /lib/x86_64-linux-gnu/libc.so.6\n"
    )
    assert found.links == {"/usr/bin/dash libc.so.6 /lib/x86_64-linux-gnu/libc.so.6"}
    assert found.programs == {"python3", "ls"} and found.libraries == {"libc.so.6"}
    assert found.noted == {"/etc/ld.so.cache", "/etc/ld.so.conf.d"}
    assert "/etc/ld.so.conf.d" in found.roots
    entries = [
        {"Path": "/etc/ld.so.cache", "Kind": 0},
        {"Path": "/etc/ld.so.conf.d/zz.conf", "Kind": 1},
        {"Path": "/etc/ld.so.conf.d", "Kind": 0},
        {"Path": "/usr/bin/python3", "Kind": 0},
    ]
    assert audit.noted(entries, found) == [
        "added /etc/ld.so.conf.d/zz.conf",
        "changed /etc/ld.so.cache",
        "changed /etc/ld.so.conf.d",
    ]
    tampered, _ = audit.findings(entries, found)
    assert tampered == ["changed /usr/bin/python3"]  # the loader's files: noted only


# --- the tracer in a real container ---------------------------------------------------


@pytest.mark.docker
def test_the_tracer_in_a_container() -> None:
    """What the tracer reports, from a script that plays the ways a file is reached: a
    new symbolic link to an image's program, a script through its interpreter, a new
    ELF interpreter, a program run by a process that gave up root (not readable to root
    until made dumpable), a library by path and through an environment variable, a
    relative open, a file opened in a thread, and what the tests' own processes wrote."""
    from gem_eval import make
    from gem_eval.envs.terminal import tracer
    from gem_eval.sandbox import docker_launch
    from gem_eval.sandbox.factory import make_sandbox, resolve_image

    image_map = {"python:3*": str(ROOT / "tasks" / "terminal" / "base")}
    env = make("terminal:Task-v0", path=str(TB2), image_map=image_map)

    async def main() -> None:
        sandbox = make_sandbox(resolve_image(env.unwrapped.resources().sandbox))
        await sandbox.start()
        try:
            clock = await sandbox.run_root("date +%s.%N", "reading the clock")
            since = float(clock.split()[0])
            setup = (
                "mkdir -p /opt/t /app && cd /opt/t"
                " && ln -s /bin/true /usr/local/bin/true2 && ln -s /bin/true /usr/local/bin/true3"
                " && useradd -m gemuser"
                " && printf '#!/usr/local/bin/myinterp\\n' > /opt/t/script && chmod +x script"
                " && printf '#!/bin/sh\\nexit 0\\n' > /usr/local/bin/myinterp"
                " && chmod +x /usr/local/bin/myinterp"
                " && cp /lib64/ld-linux-x86-64.so.2 /opt/t/ld.so"
                " && printf 'int main(){return 0;}' > m.c"
                " && gcc -o /opt/t/prog m.c -Wl,--dynamic-linker=/opt/t/ld.so"
                " && printf 'int f(){return 1;}' > l.c && gcc -shared -fPIC -o libl.so l.c"
                " && echo data > /opt/t/data.txt && echo 'x = 1' > /opt/t/mod.py"
                " && echo after > /opt/t/after.txt"
                " && echo 'print(1)' > /app/json.py"
            )
            await sandbox.run_root(setup, "setting files up")
            await asyncio.sleep(0.05)
            engine = await docker_launch.engine()
            binary = await asyncio.to_thread(tracer.binary, engine.os, engine.arch)
            assert binary is not None
            trace = tracer.Trace(binary, since, "/app", "/tests", ["/logs/gem-eval"], [])
            await trace.install(sandbox)
            script = (
                "true2; /opt/t/script; /opt/t/prog; runuser -u gemuser -- true3;"
                " LD_PRELOAD=/opt/t/libl.so /bin/true;"
                " cd /opt/t && cat data.txt > /dev/null;"
                ' python3 -c \'import threading, sys; sys.path.insert(0, "/opt/t");'
                ' t = threading.Thread(target=lambda: __import__("mod")); t.start(); t.join();'
                ' open("/opt/t/after.txt").read()\';'
                " echo new > /tmp/mine.sh; sh /tmp/mine.sh; exit 3"
            )
            argv = trace.command(["bash", "--noprofile", "--norc", "-c", script])
            result = await sandbox.exec(argv, timeout=60, user="root", cwd="/")
            report = parse_trace(result.stdout)
            assert report.status == 3 and not report.cut and not report.failures, result
            seen = {(f.kind, f.path) for f in report.findings}
            assert ("s", "/usr/local/bin/true2") in seen  # a new link to a pristine program
            assert ("s", "/usr/local/bin/true3") in seen  # run by a process that left root
            assert ("x", "/opt/t/script") in seen
            assert ("i", "/usr/local/bin/myinterp") in seen  # the kernel ran it: no open
            assert ("x", "/opt/t/prog") in seen and ("l", "/opt/t/ld.so") in seen
            assert ("o", "/opt/t/libl.so") in seen
            assert ("o", "/opt/t/data.txt") in seen  # reported; judged as data
            assert ("o", "/opt/t/mod.py") in seen  # opened in a thread
            assert not any("/tmp/mine.sh" in p for _, p in seen)  # the run's own file
            assert not any(p.startswith("/app") for _, p in seen)  # never imported here
            flags = {f.path: f.flags for f in report.findings if f.kind == "o"}
            assert "E" in flags["/opt/t/libl.so"] and "P" in flags["/opt/t/mod.py"]
            # Once a process loaded the agent's code, what it opens next may be that code's.
            assert "n" not in flags["/opt/t/mod.py"] and "n" in flags["/opt/t/after.txt"]
        finally:
            await sandbox.close()
            env.close()

    asyncio.run(main())
