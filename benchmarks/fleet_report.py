"""The fleet benchmark's printout and its PASS/FAIL verdicts (benchmarks/fleet.py measures)."""

from __future__ import annotations

from typing import Any


def verdicts(figures: dict[str, Any], kills: int) -> list[tuple[str, bool]]:
    fault, race = figures["kills"], figures["sqlite_resumes"]
    checks = [
        (
            f"{kills} kills landed mid-job",
            len(fault["kills"]) == kills,
        ),
        (
            f"every job's result once: {fault['jobs']} results, {fault['jobs']} jobs done",
            fault["results"] == fault["done"] == fault["jobs"],
        ),
        ("0 duplicated turns", fault["duplicated_turns"] == 0),
        ("0 gaps", fault["gaps"] == 0),
        ("0 jobs run twice at once", fault["run_twice_at_once"] == 0),
        ("0 results written twice", fault["results_written_twice"] == 0),
        ("0 lost long-term supports", fault["long_term_lost"] == 0),
        ("transcripts equal the uninterrupted ones", fault["differ_from_uninterrupted"] == 0),
        ("SQLite: exactly one resume runs", race["ran"] == 1 and race["other_outcomes"] == 0),
        ("SQLite: result equals an uninterrupted run", race["equals_uninterrupted"]),
    ]
    for f in figures["scaling"]:
        ok = f["results"] == f["jobs"] and f["duplicated_turns"] == 0
        checks.append((f"{_setup(f)}: every job stored once", ok))
    return checks


def _setup(f: dict[str, Any]) -> str:
    return f"{f['workers']} worker(s) x concurrency {f['concurrency']}"


def print_report(figures: dict[str, Any], kills: int) -> None:
    print("PostgreSQL: procrastinate workers (scripted model, long-term memory on)")
    first = figures["scaling"][0]
    against = "one worker" if first["workers"] == first["concurrency"] == 1 else "the first"
    for f in figures["scaling"]:
        print(
            f"  {_setup(f):28} {f['jobs']} jobs in {f['seconds']:6.1f} s "
            f"({f['per_minute']:5.1f}/min) · {f['speedup']:.2f}x {against}"
        )
    fault = figures["kills"]
    print(
        f"  {_setup(fault)}, {len(fault['kills'])} SIGKILLs: {fault['jobs']} jobs in "
        f"{fault['seconds']:.1f} s; killed at turns "
        f"{', '.join(str(k['at_turn']) for k in fault['kills'])}"
    )
    print(
        f"  results {fault['results']}/{fault['jobs']} · done {fault['done']} · failed "
        f"{fault['failed']} · duplicated turns {fault['duplicated_turns']} · gaps "
        f"{fault['gaps']} · run twice at once {fault['run_twice_at_once']} · results written "
        f"twice {fault['results_written_twice']} · transcripts differing from the "
        f"uninterrupted batch {fault['differ_from_uninterrupted']}"
    )
    for error in sorted(set(fault.get("errors", []))):
        print(f"  failed job: {error}")
    print(
        f"  jobs started again after a kill {fault['attempts']['jobs_started_again']} "
        f"({fault['attempts']['job_starts']} starts in all); turns redone (a step the killed "
        f"job had not saved) {fault['turns_redone_after_kill']}"
    )
    print(
        f"  long-term memory: {fault['long_term_updates']} expected supports in "
        f"{fault['long_term_scopes']} scopes, lost {fault['long_term_lost']}, revision chain "
        f"breaks {fault['revision_chain_breaks']}"
    )
    race = figures["sqlite_resumes"]
    print(
        f"SQLite: {race['resumes']} `ima resume` at once of a run killed at turn {race['killed_at_turn']}"
    )
    print(
        f"  ran {race['ran']} · refused {race['refused']} · other {race['other_outcomes']} · "
        f"equals the uninterrupted run: {race['equals_uninterrupted']} ({race['turns']} turns)"
    )
    for said in race["other_said"]:
        print(f"  other: {said}")
    for label, ok in verdicts(figures, kills):
        print(f"{'PASS' if ok else 'FAIL'}  {label}")
