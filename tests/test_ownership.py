"""Each role's own key items (`owns` in a task file): validated when the task loads, chosen
for the bundled task from the roles' descriptions, and measured beside every item."""

from __future__ import annotations

import pytest
from conftest import task_file

from ima.core.errors import UserError
from ima.measures.memory_quality import memory_prompt_sources, retention
from ima.tasks import Task, load_task


def role(data: dict, role_id: str) -> dict:
    return next(r for r in data["roles"] if r["id"] == role_id)


def test_each_role_of_the_bundled_task_owns_what_its_description_gives_it(task: Task):
    counts = {r.id: len(task.own_items(r.id)) for r in task.roles}
    assert counts == {
        "CDA": 36,  # facilitator, integrator, reviewer and finaliser: the whole brief
        "BOA": 10,
        "DEA": 23,
        "MLA": 9,
        "IA": 18,
        "KIA": 36,
        "ERA": 36,
        "DJE": 36,
    }
    dea, mla, boa = (set(task.own_items(r)) for r in ("DEA", "MLA", "BOA"))
    assert {"recorded", "uploaded", "dashboard-latency", "search-latency", "R1", "R2"} <= dea
    assert "gpu-hours" not in dea and "budget" not in dea
    assert {"gpu-hours", "labelled-frames", "labelled-sweeps", "R8", "R9"} <= mla
    assert "recorded" not in mla and "R1" not in mla
    assert {"budget", "team", "R10"} <= boa and "recorded" not in boa
    # Every item is some specialist's own, not only the generalists'.
    specialists = {i for r in ("BOA", "DEA", "MLA", "IA") for i in task.own_items(r)}
    assert specialists == set(task.key_items)
    assert task.own_items("HUMAN") == task.key_items  # a speaker the task does not name


def test_a_task_without_owners_gives_every_role_every_item_and_keeps_its_fingerprint(
    tmp_path, task: Task
):
    def drop_owners(data):
        for r in data["roles"]:
            r.pop("owns", None)

    plain = load_task(str(task_file(tmp_path, drop_owners)))
    assert all(plain.own_items(r.id) == plain.key_items for r in plain.roles)
    assert task.fingerprint != plain.fingerprint  # ownership is part of the task's content


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda d: role(d, "DEA")["owns"].append("R13"),
            "role DEA owns 'R13', which is neither a key figure nor a requirement",
        ),
        (lambda d: role(d, "MLA")["owns"].append("R8"), "role MLA owns 'R8' twice"),
        (
            lambda d: d["requirements"].append({"id": "budget", "text": "x"}),
            "owns 'budget', the id of both a key figure and a requirement",
        ),
        (
            lambda d: [r.update(owns=["R1"]) for r in d["roles"]],  # every role: R1 alone
            "no role owns fleet, vehicle-rate,",
        ),
    ],
    ids=["unknown", "twice", "ambiguous", "unowned"],
)
def test_ownership_mistakes_are_named_in_one_line(tmp_path, cli, edit, message):
    path = task_file(tmp_path, edit)
    with pytest.raises(UserError, match=message):
        load_task(str(path))
    code, _, err = cli("run", "--task", str(path), "--model", "scripted")
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_a_task_cut_down_to_fewer_roles_still_loads(tmp_path):
    """Owners live on roles, so removing a role removes its ownership with it (the roles
    without `owns` still own every item)."""

    def cut(data):
        data["roles"] = [r for r in data["roles"] if r["id"] not in ("MLA", "IA")]
        data["schedule"]["workers"] = ["BOA", "DEA"]
        del data["design"]  # its parts name the roles cut: one part per worker instead

    small = load_task(str(task_file(tmp_path, cut)))
    assert len(small.own_items("DEA")) == 23


def test_own_retention_counts_only_the_roles_own_items(task: Task):
    memory = (
        "## Key requirements and constraints\n"
        "- Fleet records 80 TB/day; 12 TB/day go over depot Wi-Fi\n"
        "- GPU: 400 A100 GPU-hours per run, every two weeks\n"
        "- Blur faces and licence plates before labelling; access to raw data is logged"
    )
    sources = memory_prompt_sources()
    dea, mla = retention(task, memory, sources, "DEA"), retention(task, memory, sources, "MLA")
    assert dea.figures == mla.figures and dea.share == mla.share  # the same text, all items
    assert dea.figures == ("recorded", "uploaded", "retraining-cadence", "gpu-hours")
    assert dea.requirements == ("R5",)
    assert dea.own_held == ("recorded", "uploaded", "R5") and len(dea.own_items) == 23
    assert dea.own_share == pytest.approx(3 / 23)
    assert mla.own_held == ("retraining-cadence", "gpu-hours", "R5")
    assert mla.own_share == pytest.approx(3 / 9)
    assert retention(task, memory, sources).own_share == dea.share  # no role: every item
