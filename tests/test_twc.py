"""TextWorld Commonsense as text (ima.environments.twc) and the JVM it runs on
(ima.environments.jvm): one JVM per process serves every game, stops when asked or at exit,
and never outlives its process, even one killed outright."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from ima.core.errors import UserError
from ima.environments import jvm, list_tasks
from ima.environments.twc import SEEDS, SETTINGS, TWCEnv, game_params, gold_path

TASKS = list_tasks("twc")
FIRST = TASKS[0]  # twc-rooms1-items1-s20000
TWO_ITEMS = next(t for t in TASKS if t.id == "twc-rooms1-items2-s20000")


def java_alive(pid: int) -> bool:
    """Whether a process runs (a zombie waiting for its parent to reap it does not)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.fixture(scope="module", autouse=True)
def no_java_left_behind():
    yield
    pids = list(jvm.running().values())
    jvm.shutdown()
    assert jvm.running() == {} and not any(java_alive(pid) for pid in pids)


def test_the_settings_and_seeds_are_the_stored_tasks_with_the_games_gold_paths():
    assert [t.family for t in TASKS[:: len(SEEDS)]] == [
        f"twc-rooms{r}-items{i}" for r, i in SETTINGS
    ]
    assert {t.seed for t in TASKS} == set(SEEDS) and min(SEEDS) >= 20000  # the test fold
    for task in TASKS[::4]:
        rooms, items = task.family.split("-")[1:]
        params = game_params(int(rooms.removeprefix("rooms")), int(items.removeprefix("items")))
        assert dict(task.params) == params
        assert gold_path(params, task.seed) == (task.goal, task.oracle)


def test_the_observation_is_the_room_then_the_inventory():
    env = TWCEnv(FIRST)
    room, inventory = env.observation().split("\nInventory:")
    assert room.startswith("You are in the ") and "notebook" in room
    assert inventory == "\n  Your inventory is currently empty."
    result = env.step("take notebook")
    assert result.message == "You take the notebook."
    assert env.observation().endswith("Inventory:\n  a notebook")


def test_valid_actions_are_sorted_and_read_ignoring_case_and_spacing():
    env = TWCEnv(TWO_ITEMS)
    for _ in range(3):
        assert list(env.valid_actions()) == sorted(env.valid_actions())
        env.step("look around")
    assert {"inventory", "look around", "take notebook"} <= set(env.valid_actions())
    result = env.step("  TAKE   Notebook. ")
    assert result.valid and env.actions[-1] == "  TAKE   Notebook. "
    assert env.progress == 0.25


def test_a_near_miss_is_answered_with_the_closest_valid_action():
    env = TWCEnv(FIRST)
    result = env.step("take notebok")
    assert result.message == (
        "'take notebok' is not a valid action now (did you mean 'take notebook'?); nothing changed."
    )


def test_progress_is_the_games_score_and_falls_when_an_object_is_misplaced():
    env = TWCEnv(TWO_ITEMS)
    scores = [
        env.step(a).progress
        for a in ("take notebook", "open wastepaper basket", "put notebook in wastepaper basket")
    ]
    assert scores == [0.25, 0.25, 0.0] and not env.success and not env.done


def test_one_jvm_serves_every_game_and_games_stay_apart():
    first, second = TWCEnv(TWO_ITEMS), TWCEnv(TWO_ITEMS)
    assert len(jvm.running()) == 1
    first.step("take notebook")
    assert second.observation() == TWCEnv(TWO_ITEMS).observation() != first.observation()
    second.step("take used Q-tip")
    assert "used Q-tip" not in first.observation().split("Inventory:")[1]
    assert len(jvm.running()) == 1


def test_shutdown_stops_the_jvm_and_the_next_game_starts_another():
    TWCEnv(FIRST)
    (before,) = jvm.running().values()
    jvm.shutdown()
    assert jvm.running() == {} and not java_alive(before)
    assert TWCEnv.replay(FIRST, FIRST.oracle).success
    (after,) = jvm.running().values()
    assert after != before and jvm.start_seconds(next(iter(jvm.running()))) is not None


def test_without_java_the_error_says_what_to_install(monkeypatch):
    monkeypatch.setattr(jvm.shutil, "which", lambda name: None)
    with pytest.raises(UserError, match="apt-get install openjdk-17-jre-headless"):
        jvm.gateway("/nowhere/no-such.jar")


def test_unknown_game_parameters_are_a_user_error():
    with pytest.raises(UserError, match=r"TWC rejects the parameters.*less than 3"):
        gold_path(game_params(9, 1), 20000)


PLAYER = """
import sys
from ima.environments import jvm, make
env = make("twc-rooms1-items1-s20000")
env.step("take notebook")
print(*jvm.running().values(), flush=True)
if sys.argv[1] == "wait":
    sys.stdin.read()
"""


def _gone(pid: int, seconds: float = 60.0) -> bool:
    deadline = time.monotonic() + seconds  # a bound, not a measurement: gone at once is fine
    while java_alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.mark.slow
def test_a_process_that_played_twc_leaves_no_java_behind_when_it_exits():
    done = subprocess.run(
        [sys.executable, "-c", PLAYER, "exit"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert not java_alive(int(done.stdout))  # stopped at exit, before the process ended


@pytest.mark.slow
def test_a_process_killed_outright_leaves_no_java_behind():
    player = subprocess.Popen(
        [sys.executable, "-c", PLAYER, "wait"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        pid = int(player.stdout.readline())
        assert java_alive(pid)
    finally:
        player.send_signal(signal.SIGKILL)
        player.wait(timeout=60)
    assert _gone(pid)  # its stdin closed: the JVM ends itself
