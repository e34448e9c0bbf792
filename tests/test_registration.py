from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from gem_eval import list_envs, make, register, spec
from gem_eval.errors import EnvArgumentError, RegistrationError, UnknownEnvError
from gem_eval.registration import _REGISTRY
from tests.fakes import FakeEnv


@pytest.fixture
def scratch_ids():
    before = set(_REGISTRY)
    yield
    for key in set(_REGISTRY) - before:
        del _REGISTRY[key]


def test_unknown_id_names_the_closest_ids() -> None:
    with pytest.raises(UnknownEnvError) as err:
        make("game:Wordel-v0-easy")
    assert "game:Wordle-v0-easy" in str(err.value)
    assert str(err.value).startswith("unknown env id 'game:Wordel-v0-easy'.")


def test_unknown_id_with_nothing_close_has_no_suggestion() -> None:
    with pytest.raises(UnknownEnvError) as err:
        make("zzz:Qqqqqq-v9")
    assert "Did you mean" not in str(err.value)


def test_ids_are_matched_case_insensitively_as_a_fallback() -> None:
    assert spec("game:TowerOfHanoi-v0-easy").id == "game:TowerofHanoi-v0-easy"


def test_id_parts() -> None:
    s = spec("game:Wordle-v0-easy")
    assert (s.family, s.name, s.version, s.variant) == ("game", "Wordle", 0, "easy")
    assert spec("game:Wordle-v0").variant is None


def test_register_make_and_override_defaults(scratch_ids: None) -> None:
    register("test:Fake-v0", FakeEnv, length=2)
    register("test:Fake-v0-long", FakeEnv, length=5)
    assert make("test:Fake-v0").length == 2  # type: ignore[attr-defined]
    assert make("test:Fake-v0", length=9).length == 9  # type: ignore[attr-defined]
    assert make("test:Fake-v0").spec.id == "test:Fake-v0"
    assert list_envs("test") == ["test:Fake-v0", "test:Fake-v0-long"]


def test_bad_override_names_the_parameter(scratch_ids: None) -> None:
    register("test:Fake-v0", FakeEnv)
    with pytest.raises(EnvArgumentError, match=r"no parameter 'lenght'.*length"):
        make("test:Fake-v0", lenght=3)


def test_game_override_checks_base_class_parameters() -> None:
    env = make("game:GuessTheNumber-v0", progress_weight=0.25)
    assert env.progress_weight == 0.25  # type: ignore[attr-defined]
    with pytest.raises(EnvArgumentError, match="max_numbr"):
        make("game:GuessTheNumber-v0", max_numbr=3)


@pytest.mark.parametrize(
    "bad", ["Wordle", "game:Wordle", "game:-v0", "game:Wordle-v0-", "a:b:C-v0"]
)
def test_malformed_ids_are_rejected(bad: str, scratch_ids: None) -> None:
    with pytest.raises(RegistrationError):
        register(bad, FakeEnv)


def test_duplicate_registration_needs_override(scratch_ids: None) -> None:
    register("test:Fake-v0", FakeEnv, length=1)
    with pytest.raises(RegistrationError, match="already registered"):
        register("test:Fake-v0", FakeEnv)
    register("test:Fake-v0", FakeEnv, length=4, override=True)
    assert make("test:Fake-v0").length == 4  # type: ignore[attr-defined]


def test_entry_points_are_imported_only_by_make(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scratch_ids: None
) -> None:
    (tmp_path / "lazy_env_mod.py").write_text(
        textwrap.dedent(
            """
            from tests.fakes import FakeEnv

            class LazyEnv(FakeEnv):
                pass
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    register("test:Lazy-v0", "lazy_env_mod:LazyEnv")
    assert "lazy_env_mod" not in sys.modules
    assert "test:Lazy-v0" in list_envs()
    assert "lazy_env_mod" not in sys.modules
    env = make("test:Lazy-v0")
    assert type(env).__name__ == "LazyEnv"
    monkeypatch.delitem(sys.modules, "lazy_env_mod")


def test_broken_entry_point_is_a_registration_error(scratch_ids: None) -> None:
    register("test:Broken-v0", "no_such_module_xyz:Env")
    with pytest.raises(RegistrationError, match="cannot be loaded"):
        make("test:Broken-v0")


def test_listing_does_not_import_game_modules() -> None:
    import subprocess

    code = (
        "import sys, gem_eval; gem_eval.list_envs(); "
        "print(any(m.startswith('gem_eval.envs.games.') for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_out_of_range_setting_is_an_argument_error() -> None:
    message = "game:GuessTheNumber-v0: max_turns must be at least 1"
    with pytest.raises(EnvArgumentError, match=message):
        make("game:GuessTheNumber-v0", max_turns=0)


def test_register_before_any_make_keeps_the_bundled_envs() -> None:
    import subprocess
    import sys

    code = (
        "import gem_eval\n"
        "from tests.fakes import FakeEnv\n"
        "gem_eval.register('test:Early-v0', FakeEnv)\n"
        "print(len(gem_eval.list_envs('game')), gem_eval.make('game:Wordle-v0').spec.id)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == [str(len(list_envs("game"))), "game:Wordle-v0"]


def test_a_factory_may_return_a_wrapper(scratch_ids: None) -> None:
    from gem_eval.wrappers import MaxTurns

    register("test:Wrapped-v0", lambda: MaxTurns(FakeEnv(), 2))
    env = make("test:Wrapped-v0")
    assert env.spec.id == "test:Wrapped-v0" and env.unwrapped.spec.id == "test:Wrapped-v0"


def test_a_setting_of_the_wrong_type_is_an_argument_error() -> None:
    with pytest.raises(EnvArgumentError, match="game:GuessTheNumber-v0"):
        make("game:GuessTheNumber-v0", max_turns="abc")
