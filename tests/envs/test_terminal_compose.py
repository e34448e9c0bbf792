"""Multi-service compose files as Terminal-Bench 1 and Harbor lay them out: the agent's
service, its sidecars (what is read, what is refused with the file and line), and the
sandbox a task asks for."""

from __future__ import annotations

from pathlib import Path

import pytest

from gem_eval.envs.terminal.compose import substitute
from gem_eval.envs.terminal.env import TerminalEnv
from gem_eval.envs.terminal.layout import load_task
from gem_eval.errors import TaskFormatError
from gem_eval.records import HealthSpec
from tests.envs.test_terminal_layout import tb1, tb2, write

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "terminal" / "tb2-stock-db"

# The shape of TB1's simple-web-scraper and simple-sheets-put: `client` built from the
# task's Dockerfile and the harness's variables, a server built from a directory, a
# database from an image.
TB1_COMPOSE = """
    services:
      client:
        build:
          dockerfile: Dockerfile
        image: ${T_BENCH_TASK_DOCKER_CLIENT_IMAGE_NAME}
        container_name: ${T_BENCH_TASK_DOCKER_CLIENT_CONTAINER_NAME}
        command: [ "sh", "-c", "sleep infinity" ]
        environment:
          - TEST_DIR=${T_BENCH_TEST_DIR}
        volumes:
          - ${T_BENCH_TASK_LOGS_PATH}:${T_BENCH_CONTAINER_LOGS_PATH}
        networks:
          - app-network
        depends_on:
          server:
            condition: service_healthy
      server:
        build:
          context: server
        image: ${T_BENCH_TASK_DOCKER_NAME_PREFIX}__server
        container_name: ${T_BENCH_TASK_DOCKER_NAME_PREFIX}__server
        command: python3 server.py --port "8000"
        env_file: server/server.env
        environment:
          PORT: "8000"
          DB: ${DB_URL:-postgres://db/app}
        expose: ["8000"]
        networks: [app-network]
        hostname: web
        depends_on: [db]
        healthcheck:
          test: curl -f http://localhost:8000/
          interval: 1m30s
          timeout: 500ms
          start_period: 2s
          retries: 4
      db:
        image: postgres:16
        mem_limit: 4G
        deploy: {resources: {limits: {cpus: "0.5"}}}
        volumes:
          - ./init.sql:/docker-entrypoint-initdb.d/init.sql:ro
          - pgdata:/var/lib/postgresql/data
    networks:
      app-network:
        driver: bridge
    volumes:
      pgdata:
"""


def tb1_task(tmp_path: Path, compose: str = TB1_COMPOSE) -> Path:
    path = tb1(tmp_path, compose=compose)
    write(path / "server" / "Dockerfile", "FROM python:3.12\n")
    write(path / "server" / "server.env", "# settings\nMODE='strict'\nPORT=1\n")
    write(path / "init.sql", "CREATE TABLE t (x int);\n")
    return path


def test_a_tb1_client_with_a_server_and_a_database(tmp_path: Path) -> None:
    path = tb1_task(tmp_path).resolve()
    task = load_task(path)
    assert (task.service, task.depends_on, task.env) == (
        "client",
        {"server": "service_healthy"},
        {"TEST_DIR": "/tests"},
    )
    server, db = task.sidecars
    assert server.name == "server" and server.image is None
    assert (server.build, server.dockerfile) == (str(path / "server"), "Dockerfile")
    assert server.command == ["python3", "server.py", "--port", "8000"]
    # env_file first, environment over it; a default where the variable is unset.
    assert server.env == {"MODE": "strict", "PORT": "8000", "DB": "postgres://db/app"}
    assert server.aliases == ["web"]  # container_name's harness variable is left out
    assert server.depends_on == {"db": "service_started"}
    assert server.healthcheck == HealthSpec(
        test=["CMD-SHELL", "curl -f http://localhost:8000/"],
        interval_s=90.0,
        timeout_s=0.5,
        retries=4,
        start_s=2.0,
    )
    assert (db.image, db.build, db.memory, db.cpus) == ("postgres:16", None, "4g", 0.5)
    # The task's file is copied in; the named volume is the container's own disk.
    assert db.files == {"/docker-entrypoint-initdb.d/init.sql": str(path / "init.sql")}


def test_the_sandbox_a_compose_task_asks_for(tmp_path: Path) -> None:
    spec = TerminalEnv(str(tb1_task(tmp_path))).resources().sandbox
    assert spec.hostname == "client" and spec.depends_on == {"server": "service_healthy"}
    assert [s.name for s in spec.sidecars] == ["server", "db"]
    assert spec.network is True  # TB1: the task allows the internet unless it says not


def test_a_harbor_task_with_a_database_beside_main() -> None:
    task = load_task(FIXTURE)
    assert (task.layout, task.service, task.network) == ("tb2", "main", False)
    assert task.depends_on == {"db": "service_healthy"}
    assert task.dockerfile == "Dockerfile" and task.context == FIXTURE / "environment"
    [db] = task.sidecars
    # Paths of a Harbor compose file are relative to environment/, where it lies.
    assert db.build == str(FIXTURE / "environment" / "db")
    assert db.files == {"/srv/data/stock.json": str(FIXTURE / "environment/db/stock.json")}
    assert db.healthcheck is not None and db.healthcheck.retries == 30


def test_a_harbor_compose_without_main_only_adds_sidecars(tmp_path: Path) -> None:
    path = tb2(tmp_path)
    write(path / "environment" / "docker-compose.yaml", "services:\n  cache:\n    image: redis\n")
    task = load_task(path)
    assert task.service == "main" and task.depends_on == {}
    assert [(s.name, s.image) for s in task.sidecars] == [("cache", "redis")]


REFUSED = [
    ("    privileged: true\n", 6, "`privileged` is not supported"),
    ("    network_mode: host\n", 6, "`network_mode` is not supported"),
    ("    volumes: ['/etc:/host-etc']\n", 6, "mounts /etc, outside the task"),
    ("    volumes: ['../../../etc/passwd:/p']\n", 6, "outside the task"),
    ("    volumes: ['./missing.sql:/x.sql']\n", 6, "no such file"),
    ("    depends_on: [nope]\n", 6, "no service 'nope'"),
    ("    depends_on: {client: {condition: service_done}}\n", 6, "unknown condition"),
    ("    healthcheck: {test: [CMD, x], interval: soon}\n", 6, "not a duration"),
    ("    healthcheck: {test: [x]}\n", 6, "must start CMD"),
]


@pytest.mark.parametrize(("extra", "line", "said"), REFUSED)
def test_what_a_sidecar_may_not_do_is_one_error_with_its_line(
    tmp_path: Path, extra: str, line: int, said: str
) -> None:
    compose = "services:\n  client:\n    build: .\n  db:\n    image: postgres:16\n" + extra
    path = tb1(tmp_path, compose=compose)
    with pytest.raises(TaskFormatError) as err:
        load_task(path)
    assert str(err.value).startswith(f"{path.resolve() / 'docker-compose.yaml'}:{line}: ")
    assert said in str(err.value)


def test_an_image_only_the_harness_could_name_and_a_cycle_are_refused(tmp_path: Path) -> None:
    compose = "services:\n  client:\n    build: .\n  web:\n    image: ${PREFIX}__web\n"
    with pytest.raises(TaskFormatError, match="needs `build` or an `image` without variables"):
        load_task(tb1(tmp_path / "a", compose=compose))
    cycle = (
        "services:\n  client:\n    depends_on: [a]\n  a:\n    image: x\n    depends_on: [b]\n"
        "  b:\n    image: y\n    depends_on: [a]\n"
    )
    with pytest.raises(TaskFormatError, match="depends on itself"):
        load_task(tb1(tmp_path / "b", compose=cycle))


def test_compose_variables() -> None:
    variables = {"SET": "v", "EMPTY": ""}
    assert substitute("$SET ${SET} ${UNSET} $UNSET $$HOME", variables) == (
        "v v ${UNSET} $UNSET $HOME"
    )
    assert substitute("${UNSET:-d} ${EMPTY:-d} ${EMPTY-d} ${UNSET-d} ${SET:-d}", variables) == (
        "d d  d v"
    )
