"""What a BabyAI agent sees, in words: the objects in its 7x7 view, each placed relative to
it ('a red ball 2 steps forward and 1 step left'), the nearest wall straight ahead, left and
right, the cell right in front of it (what `pick up` and `toggle` act on) and what it carries.

The layout follows the text BabyAI of LLM agent benchmarks (BabyAI-Text, BALROG): relative
positions only, no map and no compass; walls only along the agent's own row and column,
doors and objects wherever they are visible. Cells hidden behind walls are not described.
"""

from __future__ import annotations

from minigrid.core.world_object import WorldObj
from minigrid.minigrid_env import MiniGridEnv


def with_article(name: str) -> str:
    """'an open red door', 'a grey key'."""
    return ("an " if name[0] in "aeiou" else "a ") + name


def name_of(obj: WorldObj) -> str:
    """An object in words, its state included: 'locked blue door', 'red ball', 'wall'."""
    if obj.type == "wall":
        return "wall"
    if obj.type == "door":
        state = "locked" if obj.is_locked else "open" if obj.is_open else "closed"
        return f"{state} {obj.color} door"
    return f"{obj.color} {obj.type}"


def _steps(count: int, way: str) -> str:
    return f"{count} step{'' if count == 1 else 's'} {way}"


def where(forward: int, right: int) -> str:
    """A cell relative to the agent: '2 steps forward and 1 step left'."""
    parts = []
    if forward:
        parts.append(_steps(forward, "forward"))
    if right:
        parts.append(_steps(abs(right), "right" if right > 0 else "left"))
    return " and ".join(parts)


def describe(env: MiniGridEnv) -> str:
    """The agent's view and what it carries, one fact per line, in a fixed order."""
    grid, visible = env.gen_obs_grid()
    size = env.agent_view_size
    me_x, me_y = size // 2, size - 1  # the agent's cell in its own view, facing up
    seen: list[tuple[int, int, int, str]] = []  # (distance, forward, right, name)
    walls: dict[str, tuple[int, int]] = {}  # the nearest wall each way
    for x in range(size):
        for y in range(size):
            obj = grid.get(x, y)
            if obj is None or not visible[x, y] or (x, y) == (me_x, me_y):
                continue
            forward, right = me_y - y, x - me_x
            if obj.type == "wall":
                if right == 0:
                    way = "forward"
                elif forward == 0:
                    way = "right" if right > 0 else "left"
                else:
                    continue  # walls off the agent's row and column are left out
                if way not in walls or forward + abs(right) < sum(map(abs, walls[way])):
                    walls[way] = (forward, right)
                continue
            seen.append((forward + abs(right), forward, right, name_of(obj)))
    seen += [(f + abs(r), f, r, "wall") for f, r in walls.values()]
    carried = env.carrying
    front = env.grid.get(*env.front_pos)
    lines = [
        f"You carry {with_article(name_of(carried)) if carried else 'nothing'}.",
        f"In front of you: {with_article(name_of(front)) if front else 'nothing'}.",
    ]
    if seen:
        lines.append("You see:")
        lines += [f"- {with_article(name)} {where(f, r)}" for _, f, r, name in sorted(seen)]
    else:
        lines.append("You see nothing but the floor.")
    return "\n".join(lines)
