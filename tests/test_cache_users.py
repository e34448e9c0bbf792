"""Every cache gem-eval fills, raced by threads and by processes on an empty cache: MCP
service build contexts, the base image tarball, task image builds, search indexes and the
local model's GGUF. Docker, npm and pip are replaced by slow fakes that log each build."""

from __future__ import annotations

import io
import json
import tarfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from gem_eval.envs.mcpmark.services import PostgresService
from gem_eval.sandbox import docker_client, images
from tests.test_cache import entries_in, race

SITE_FILE = "site/mcp/__init__.py"


def fake_fetch(log: list[str]) -> Any:
    def fetch(self: PostgresService, context: Path) -> None:
        log.append(context.name)
        time.sleep(0.2)  # pip's time: a window for a second fetcher
        (context / SITE_FILE).parent.mkdir(parents=True)
        (context / SITE_FILE).write_text("# the mcp package\n")

    return fetch


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GEM_EVAL_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_threads_preparing_one_service_context_fetch_once(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fetches: list[str] = []
    monkeypatch.setattr(PostgresService, "fetch", fake_fetch(fetches))
    start = threading.Barrier(6)

    def prepare(_: int) -> Path:
        start.wait()
        return PostgresService().build_context()

    with ThreadPoolExecutor(6) as pool:
        contexts = set(pool.map(prepare, range(6)))
    assert len(fetches) == 1
    [context] = contexts
    assert (context / "Dockerfile").is_file() and (context / SITE_FILE).is_file()
    assert entries_in(cache / "services") == [context.name]


def test_a_context_marked_ready_without_its_dockerfile_is_prepared_again(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fetches: list[str] = []
    monkeypatch.setattr(PostgresService, "fetch", fake_fetch(fetches))
    context = PostgresService().build_context()
    # What the old race left behind: a context marked ready with no Dockerfile.
    for path in sorted(context.rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    (context / ".ready").touch()
    assert PostgresService().build_context() == context
    assert len(fetches) == 2
    assert (context / "Dockerfile").is_file() and (context / SITE_FILE).is_file()
    # A context whose packages went missing is fetched again too.
    (context / SITE_FILE).unlink()
    PostgresService().build_context()
    assert len(fetches) == 3 and (context / SITE_FILE).is_file()


def test_processes_preparing_one_service_context_fetch_once(tmp_path: Path) -> None:
    log = tmp_path / "fetches.log"
    body = f"""
        from gem_eval.envs.mcpmark.services import PostgresService

        def fetch(self, context):
            with open({str(log)!r}, "a") as f:
                f.write(f"{{os.getpid()}}\\n")
            time.sleep(0.5)
            (context / {SITE_FILE!r}).parent.mkdir(parents=True)
            (context / {SITE_FILE!r}).write_text("# the mcp package\\n")

        PostgresService.fetch = fetch
        context = PostgresService().build_context()
        print((context / "Dockerfile").is_file() and (context / {SITE_FILE!r}).is_file())
    """
    results = race(tmp_path, body)
    assert [r.returncode for r in results] == [0, 0, 0], [r.stderr for r in results]
    assert [r.stdout.strip() for r in results] == ["True"] * 3
    assert len(log.read_text().split()) == 1


# The base image: a fake Docker whose "image" is present once built or loaded.


def tar_of(members: dict[str, bytes]) -> bytes:
    """A tar as Go's archive/tar (Docker) writes it: the members, then two zero blocks
    (Python's tarfile pads further, to a 10 KiB record)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        end = tar.offset
    return buffer.getvalue()[:end] + bytes(1024)


# What `docker save` writes: layers (tars themselves, ending in zero blocks), then
# manifest.json.
SAVED = tar_of(
    {
        "abc/layer.tar": tar_of({"etc/hostname": b"base\n" * 300}),
        "manifest.json": b'[{"Config": "abc.json", "Layers": ["abc/layer.tar"]}]',
    }
)


class FakeDocker:
    def __init__(self) -> None:
        self.present = False
        self.builds = 0
        self.loaded: list[bytes] = []
        self.images = self

    def build(self, tag: str, mirror: str, log: Any) -> None:
        self.builds += 1
        time.sleep(0.2)  # debootstrap's minute
        self.present = True

    def get(self, tag: str) -> FakeDocker:
        return self

    def save(self, named: bool) -> Iterator[bytes]:
        yield from (SAVED[:1000], SAVED[1000:])

    def load(self, f: Any) -> list[FakeDocker]:
        self.loaded.append(f.read())
        self.present = True
        return [self]

    def tag(self, tag: str) -> None:
        pass


@pytest.fixture
def docker(cache: Path, monkeypatch: pytest.MonkeyPatch) -> FakeDocker:
    fake = FakeDocker()
    monkeypatch.setattr(docker_client, "client", lambda: fake)
    monkeypatch.setattr(
        images, "image_recipe", lambda tag: images.RECIPE_HASH if fake.present else None
    )
    monkeypatch.setattr(images, "_build", fake.build)
    monkeypatch.setattr(images, "apt_mirror", lambda: "http://mirror/debian")
    return fake


def test_threads_asking_for_the_base_image_build_it_once(docker: FakeDocker) -> None:
    with ThreadPoolExecutor(4) as pool:
        how = sorted(pool.map(lambda _: images.ensure_base(), range(4)))
    assert how == ["built", "present", "present", "present"] and docker.builds == 1
    tarball = images.base_entry().path
    assert tarball.read_bytes() == SAVED
    docker.present = False  # a cold Docker: the tarball is loaded, not rebuilt
    assert images.ensure_base() == "loaded" and docker.loaded == [SAVED]


@pytest.mark.parametrize("cut", ["mid_member", "after_the_layers", "in_the_end_blocks"])
def test_a_truncated_base_tarball_is_not_loaded(docker: FakeDocker, cut: str) -> None:
    assert images.ensure_base() == "built"
    tarball = images.base_entry().path
    with tarfile.open(tarball) as tar:
        manifest_at = tar.getmember("manifest.json").offset
    size = {"mid_member": 700, "after_the_layers": manifest_at, "in_the_end_blocks": -512}
    tarball.write_bytes(SAVED[: size[cut]])
    assert not images.whole_tarball(tarball)
    docker.present = False
    assert images.ensure_base() == "built"
    assert docker.loaded == [] and docker.builds == 2
    assert tarball.read_bytes() == SAVED


def test_processes_asking_for_the_base_image_build_it_once(tmp_path: Path) -> None:
    image = tmp_path / "image-present"  # the fake Docker's state, shared by processes
    body = f"""
        from gem_eval.sandbox import images

        PRESENT = pathlib.Path({str(image)!r})

        class Docker:
            images = None
            def get(self, tag): return self
            def save(self, named): yield {SAVED!r}

        def build(tag, mirror, log):
            time.sleep(0.5)
            with open(PRESENT, "a") as f:
                f.write(f"{{os.getpid()}}\\n")

        Docker.images = Docker()
        images.docker_client.client = lambda: Docker.images
        images.image_recipe = lambda tag: images.RECIPE_HASH if PRESENT.exists() else None
        images._build = build
        images.apt_mirror = lambda: "http://mirror/debian"
        print(images.ensure_base())
    """
    results = race(tmp_path, body)
    assert [r.returncode for r in results] == [0, 0, 0], [r.stderr for r in results]
    assert sorted(r.stdout.strip() for r in results) == ["built", "present", "present"]
    assert len(image.read_text().split()) == 1


def test_processes_building_one_task_image_build_it_once(tmp_path: Path) -> None:
    context = tmp_path / "task"
    context.mkdir()
    (context / "Dockerfile").write_text("FROM gem-eval/base:bookworm\nRUN true\n")
    built = tmp_path / "built"
    built.mkdir()
    body = f"""
        import json
        from gem_eval.sandbox import images

        BUILT = pathlib.Path({str(built)!r})

        def recipe(tag):  # the base is there; a task image once its build finished
            if tag.startswith(images.BUILT_REPOSITORY):
                return "" if (BUILT / tag.replace("/", "_")).exists() else None
            return images.RECIPE_HASH

        def docker_build(context, dockerfile, text, tag, shown):
            with open(BUILT / "log", "a") as f:
                f.write(f"{{os.getpid()}}\\n")
            time.sleep(0.5)
            (BUILT / tag.replace("/", "_")).touch()

        images.image_recipe = recipe
        images._docker_build = docker_build
        print(images.build_image(pathlib.Path({str(context)!r})))
    """
    results = race(tmp_path, body)
    assert [r.returncode for r in results] == [0, 0, 0], [r.stderr for r in results]
    tags = {r.stdout.strip() for r in results}
    assert len(tags) == 1 and tags.pop().startswith("gem-eval/task:")
    assert len((built / "log").read_text().split()) == 1


def test_processes_indexing_one_corpus_build_the_index_once(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    lines = (
        json.dumps({"id": i, "title": f"Doc {i}", "text": f"word{i} " * 50}) for i in range(20000)
    )
    corpus.write_text("\n".join(lines) + "\n")
    body = f"""
        import json
        from gem_eval.tools.search.bm25 import BM25Backend

        backend = BM25Backend({str(corpus)!r})
        print(json.dumps([backend.built, backend.documents]))
    """
    results = race(tmp_path, body)
    assert [r.returncode for r in results] == [0, 0, 0], [r.stderr for r in results]
    reports = sorted(json.loads(r.stdout) for r in results)
    assert reports == [[False, 20000], [False, 20000], [True, 20000]]
    [index] = entries_in(tmp_path / "cache" / "search")
    assert index.endswith(".sqlite")


def test_processes_resolving_a_builtin_model_assemble_it_once(tmp_path: Path) -> None:
    log = tmp_path / "assembled.log"
    body = f"""
        from gem_eval.models import local_server

        def assemble(target):
            with open({str(log)!r}, "a") as f:
                f.write(f"{{os.getpid()}}\\n")
            with open(target, "wb") as out:
                out.write(b"GGUF")
                time.sleep(0.5)
                out.write(b" weights")

        local_server.BUILTIN_MODELS["tiny"] = local_server.BuiltinModel(assemble)
        print(local_server.resolve_gguf("tiny").read_bytes().decode())
    """
    results = race(tmp_path, body)
    assert [r.returncode for r in results] == [0, 0, 0], [r.stderr for r in results]
    assert [r.stdout.strip() for r in results] == ["GGUF weights"] * 3
    assert len(log.read_text().split()) == 1


def test_a_cached_model_cut_short_is_assembled_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gem_eval.models import local_server

    weights = b"GGUF" + b"w" * 96
    calls: list[Path] = []

    def assemble(target: Path) -> None:
        calls.append(target)
        target.write_bytes(weights)

    model = local_server.BuiltinModel(assemble, size=lambda: len(weights))
    monkeypatch.setitem(local_server.BUILTIN_MODELS, "tiny", model)
    path = local_server.resolve_gguf("tiny", tmp_path)
    path.write_bytes(weights[:50])  # a copy cut short (a full disk, a hand copy)
    assert local_server.resolve_gguf("tiny", tmp_path) == path
    assert len(calls) == 2 and path.read_bytes() == weights
