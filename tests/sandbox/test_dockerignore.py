"""``.dockerignore``: Docker's pattern rules, the context gem-eval sends, and the image tag
that ignores what the build never sees; checked against ``docker build`` itself."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import pytest

from gem_eval.errors import UserError
from gem_eval.sandbox.dockerignore import DockerIgnore
from gem_eval.sandbox.images import BASE_IMAGE, build_image, context_files, context_hash


def excluded(text: str, *paths: str) -> list[str]:
    ignore = DockerIgnore(text)
    return [p for p in paths if ignore.excludes(p)]


def test_the_documented_examples() -> None:
    # The examples of Docker's reference for .dockerignore.
    paths = ("temp", "somedir/temporary.txt", "somedir/temp", "somedir/subdir/temporary.txt")
    assert excluded("# comment\n*/temp*", *paths) == ["somedir/temporary.txt", "somedir/temp"]
    assert excluded("*/*/temp*", *paths) == ["somedir/subdir/temporary.txt"]
    assert excluded("temp?", "tempa", "tempb", "temp", "a/tempa") == ["tempa", "tempb"]
    assert excluded("**/*.go", "x.go", "a/b/y.go", "a/go") == ["x.go", "a/b/y.go"]
    assert excluded("*.md\n!README.md", "a.md", "README.md") == ["a.md"]
    # The last matching line decides.
    readmes = ("README.md", "README-secret.md", "other.md")
    assert excluded("*.md\n!README*.md\nREADME-secret.md", *readmes) == [
        "README-secret.md",
        "other.md",
    ]
    assert excluded("*.md\nREADME-secret.md\n!README*.md", *readmes) == ["other.md"]


def test_cleaning_parents_and_the_leading_double_star() -> None:
    # A leading / and ./ are the context's root; a trailing / is cleaned away.
    assert excluded("/foo/bar\n./baz/\n", "foo/bar", "x/foo/bar", "baz") == ["foo/bar", "baz"]
    # A directory's pattern excludes everything under it.
    assert excluded("node_modules", "node_modules/a/b.js", "src/node_modules") == [
        "node_modules/a/b.js"
    ]
    # A trailing ** is everything below; a leading ** with no other wildcard a suffix.
    assert excluded("build/**", "build/x", "build/a/b", "builder") == ["build/x", "build/a/b"]
    assert excluded("**.log", "a.log", "d/b.log", "log") == ["a.log", "d/b.log"]
    assert excluded("**/secret", "secret", "a/b/secret", "secrets") == ["secret", "a/b/secret"]
    # Classes: ^ negates, ranges, escapes; lines are trimmed, comments only in column 1.
    assert excluded("f[^a]o\n  g[0-9]  \n\\*x?", "fao", "fbo", "g5", "*xa", "axa") == [
        "fbo",
        "g5",
        "*xa",
    ]
    assert excluded(" # not a comment", " # not a comment", "# not a comment") == [
        "# not a comment"
    ]


@pytest.mark.parametrize("line", ["!", "[a", "a[z-a]", "a\\"])
def test_a_line_docker_refuses_is_one_error_naming_the_file(tmp_path: Path, line: str) -> None:
    (tmp_path / ".dockerignore").write_text(f"ok\n{line}\n")
    with pytest.raises(UserError, match=r"\.dockerignore: .*(exclusion|syntax)"):
        context_files(tmp_path)


def make_context(root: Path, ignore: str) -> Path:
    files = [
        "Dockerfile", "app.py", "README.md", "notes.md", "secret.env", "keep/a.txt",
        "keep/b.py", "data/big.bin", "data/keep.txt", "sub/deep/x.py", "sub/deep/y.txt",
        "sub/z.log", "__pycache__/m.pyc",
    ]  # fmt: skip
    for name in files:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(name)
    (root / ".dockerignore").write_text(ignore)
    return root


def sent(context: Path) -> set[str]:
    return {p.relative_to(context).as_posix() for p in context_files(context) if p.is_file()}


def test_the_context_walk_enters_an_excluded_directory_only_for_an_exception(
    tmp_path: Path,
) -> None:
    context = make_context(tmp_path, "data\n!data/keep.txt\n*.md\n!README.md\n*.env\n")
    files = sent(context)
    assert "data/keep.txt" in files and "data/big.bin" not in files
    assert {"README.md", "app.py", "keep/a.txt", ".dockerignore"} <= files
    assert not {"notes.md", "secret.env", "__pycache__/m.pyc"} & files
    # As `docker build` does: `*` leaves out sub/ before `!**/*.py` could take x.py back.
    only_py = make_context(tmp_path / "b", "*\n!**/*.py\n!Dockerfile\n")
    assert sent(only_py) == {"app.py", "Dockerfile", ".dockerignore"}


def test_an_ignored_file_does_not_change_the_image_tag(tmp_path: Path) -> None:
    context = make_context(tmp_path, "data\n*.env\n")
    first = context_hash(context, "FROM x")
    (context / "secret.env").write_text("changed")
    (context / "data" / "big.bin").write_text("changed")
    (context / "data" / "new.bin").write_text("new")
    assert context_hash(context, "FROM x") == first
    (context / "app.py").write_text("changed")
    assert context_hash(context, "FROM x") != first
    second = context_hash(context, "FROM x")
    (context / ".dockerignore").write_text("data\n")  # now secret.env is sent
    assert context_hash(context, "FROM x") != second


# A Dockerfile that lists what the build received.
LISTING = f"FROM {BASE_IMAGE}\nCOPY . /ctx\nRUN cd /ctx && find . -type f | sort > /list\n"
IGNORES = [
    "data\n!data/keep.txt\n*.md\n!README.md\n*.env\n",
    "*\n!**/*.py\n!Dockerfile\n",
    "sub/**\n!sub/deep/x.py\n/notes.md\n",
    "**/*.py\n!keep\n",
    "*/*.txt\nkeep/[a-b].py\nDockerfile\n.dockerignore\n",
    "# c\n\n  secret.env  \n**/deep\n",
]


def docker_listing(context: Path, tag: str) -> set[str]:
    """What ``docker build`` (the CLI's legacy builder) puts in the context."""
    env = {"DOCKER_BUILDKIT": "0", "PATH": "/usr/bin:/bin:/usr/local/bin"}
    subprocess.run(
        ["docker", "build", "-q", "-t", tag, str(context)], check=True, env=env,
        capture_output=True,
    )  # fmt: skip
    try:
        out = subprocess.run(
            ["docker", "run", "--rm", tag, "cat", "/list"], check=True, capture_output=True,
            text=True,
        ).stdout  # fmt: skip
    finally:
        subprocess.run(["docker", "rmi", "-f", tag], capture_output=True)
    return {line.removeprefix("./") for line in out.split()}


@pytest.mark.docker
@pytest.mark.parametrize("ignore", IGNORES)
def test_the_context_is_what_docker_build_sends(tmp_path: Path, ignore: str) -> None:
    context = make_context(tmp_path, ignore)
    (context / "Dockerfile").write_text(LISTING)
    (context / "__pycache__" / "m.pyc").unlink()  # gem-eval leaves these out on its own
    expected = docker_listing(context, f"gem-eval-test/ignore:{uuid.uuid4().hex[:8]}")
    # Both are sent always; the builder itself hides them from COPY when excluded.
    builder_files = {"Dockerfile", ".dockerignore"}
    assert sent(context) - builder_files == expected - builder_files


@pytest.mark.docker
def test_an_ignored_file_is_not_in_the_image_nor_rebuilds_it(tmp_path: Path) -> None:
    context = make_context(tmp_path, "secret.env\ndata\n")
    (context / "Dockerfile").write_text(LISTING)
    (context / "app.py").write_text(uuid.uuid4().hex)  # a tag no other test builds
    tag = build_image(context)
    try:
        listing = subprocess.run(
            ["docker", "run", "--rm", tag, "cat", "/list"], check=True, capture_output=True,
            text=True,
        ).stdout.split()  # fmt: skip
        assert "./app.py" in listing and "./secret.env" not in listing
        assert not any(name.startswith("./data/") for name in listing)
        (context / "secret.env").write_text("another secret")
        assert build_image(context) == tag
    finally:
        subprocess.run(["docker", "rmi", "-f", tag], capture_output=True)
