"""The final design: compiled part by part from the brief, the accepted proposal and every
agent's memory, each part checked and asked for once more when it cannot be used, what is
still unusable left open without giving up the rest; design.md renders design.json."""

from __future__ import annotations

import json
import re

import jsonschema
import pytest
from conftest import PromptRecorder, task_file
from hypothesis import given, settings
from hypothesis.strategies import data, lists, sampled_from
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage
from langgraph.runtime import Runtime

from ima.core.settings import RunContext
from ima.measures.design_quality import addressed_in_own_words, design_quality, junk_lines
from ima.meeting.design import parts
from ima.meeting.design.answers import ACTION_VERBS
from ima.meeting.design.checks import figure_conflicts, junk_reason, unit_errors
from ima.meeting.design.compile import accepted_proposal
from ima.meeting.design.dimensions import derivations, dimension_problem, in_unit
from ima.meeting.design.document import CostLine, Costs, Design
from ima.meeting.design.render import render_design
from ima.meeting.nodes.documentation import make_documentation_node
from ima.models import Models
from ima.tasks import load_task

TASK = load_task("data-pipeline")
FIGURE_TEXTS = [f"- {f.text}" for f in TASK.key_figures]

# What a fresh clone's default meeting wrote before the design was compiled part by part
# (seed 0, temperature 0, 12-05): votes as plan steps, agents as components, residue.
TODAYS_DESIGN = """## Summary
The meeting has ended (all agents accepted). The design agreed on the following components: MLA, IA, DEA, KIA, ERA. plan]:[] resource_estimates
## High-level plan
1. MLA should address next.
2. MLA: ACCEPT.
3. IA proposes the following components:
4. IA: ACCEPT.
5. DEA: ACCEPT.
## Resource estimates
- GPU-hours: 2 GB/h."""

# The order of the calls: components owner by owner (DEA, BOA, IA, MLA), then the rest.
CALLS = (
    "ingestion",
    "safety_stream",
    "batch_processing",
    "anonymisation",
    "storage",
    "operations",
    "datasets",
    "training",
)
HOW = {  # a sentence for each part of a requirement (`parts.requirement_parts`)
    "R1": ["Vehicles offload 12 TB/day over depot wifi at night and send clips over cellular LTE."],
    "R2": ["Each safety event is streamed to the dashboard and shown in under 5 min."],
    "R3": [
        "Each depot pushes its drives overnight in the eight-hour window at full uplink.",
        "Jobs start once the nightly upload lands, index every drive, and finish in 12 h.",
    ],
    "R4": ["Only clips and telemetry use cellular, so each vehicle stays under its 5 GB cap."],
    "R5": [
        "Faces and plates are blurred by the job before review.",
        "The audit log keeps every read of raw footage.",
    ],
    "R6": ["Every bucket and job runs in eu-central-1 and eu-west-1."],
    "R7": [
        "A lifecycle rule deletes raw footage at 30 days.",
        "Training copies expire at 3 years under another rule.",
        "Event records sit in a locked bucket for 5 years.",
    ],
    "R8": [
        "Each run reads a DVC snapshot with lineage to its drives.",
        "The vendor queue labels 50,000 frames and 10,000 sweeps a month.",
    ],
    "R9": ["A biweekly job spends 400 A100 GPU-hours and must pass the regression suite."],
    "R11": [
        "Clips stay on the car until the cloud sends an ack.",
        "Uploads are checked by sha 256 hash before the car frees its disk.",
        "The event path runs across zones at 99.9%.",
    ],
    "R12": [
        "Buckets replicate cross-region between Frankfurt and Ireland.",
        "The batch backlog clears in 24 h after an outage.",
        "Managed services keep the load small for a 6-person team.",
    ],
}


def component(slot, **changes):
    value = {
        "technology": slot.options[0],
        "why": f"{slot.options[0]} fits the {slot.title.lower()} with little to operate.",
        "pros": ["little to operate"],
        "cons": ["costs more per hour"],
    }
    return answer(json.dumps({**value, **changes}))


def how(requirement: str, text: str | None = None, part: int = 0):
    return answer(json.dumps({"how": text or HOW[requirement][part]}))


def calls(task, components=None, hows=None, tail=None):
    """The answers in the order the documentation asks for them: each component (owner by
    owner), then how it meets each part of its requirements not yet met, then the estimates,
    costs, plan and summary. `components` and `hows` give other answers, one per attempt;
    a component given only bad answers is open and no requirement of it is asked about."""
    components, hows, out, met = components or {}, hows or {}, [], set()
    for slot in slots(task):
        given = components.get(slot.id)
        out += given or [component(slot)]
        if given and all("DEA cloud" in str(a.content) for a in given):
            continue
        for rid in slot.meets:
            if rid not in met:
                given = hows.get(rid)  # the answers to each part, or a part's answers
                for number in range(len(parts.requirement_parts(task, rid))):
                    if given and isinstance(given[0], list):
                        out += given[number]
                    else:
                        out += given or [how(rid, part=number)]
                met.add(rid)
    return out + list(tail or [*FIGURES, PLAN, SUMMARY])


def answer(text: str) -> AIMessage:
    return AIMessage(
        text, usage_metadata={"input_tokens": 50, "output_tokens": 30, "total_tokens": 80}
    )


def chosen(derivation: str) -> AIMessage:
    return answer(json.dumps({"derivation": derivation}))


RAW_HELD = "12 TB/day uploaded over depot Wi-Fi x 30 days"  # 360 TB
UPLOADED = "12 TB/day uploaded over depot Wi-Fi x 30 days per month"  # 360 TB a month
# A derivation chosen for storage, compute and network; the GPU-hours have one derivation,
# taken without a call (858 GPU-hours a month).
ESTIMATES = [chosen(RAW_HELD), chosen(UPLOADED), chosen(UPLOADED)]
# A unit price per cost line, in the task's order: Storage, Compute, GPU training, Network.
PRICES = [answer(json.dumps({"price": usd})) for usd in (23, "0.5", 4, "2")]  # as the pattern
FIGURES = ESTIMATES + PRICES
PLAN = answer(
    json.dumps(
        {
            "steps": [
                "Set up the vehicle upload at the four depots",
                "MLA: ACCEPT.",
                "Deploy the model training agent",
                "Deploy the safety-event stream before the first drives",
                "Run the batch processing on the first nightly uploads",
            ]
        }
    )
)
SUMMARY = answer(
    json.dumps(
        {
            "summary": "A managed EU pipeline on AWS Batch and Amazon S3 blurs every drive "
            "before labelling and deletes raw data after 30 days."
        }
    )
)


def document(task, answers, *, consensus=True, transcript=()):
    """The documentation node's update for a finished meeting, and the prompts it sent."""
    model = FakeMessagesListChatModel(responses=list(answers))
    recorder = PromptRecorder()
    model.callbacks = [recorder]
    node = make_documentation_node(task, Models(agent_model=model))
    state = {
        **task.schedule.start(),
        "brief": task.description,
        "consensus": consensus,
        "transcript": list(transcript),
        "intrinsic_memory": {"DEA": {"text": "## Decisions\n- Use AWS Batch for the nightly jobs"}},
        "templates": {},
    }
    update = node(state, Runtime(context=RunContext(model="scripted", long_term=False)))
    return update, [str(messages[-1].content) for _, messages in recorder.calls]


def slots(task):
    by_id = {s.id: s for s in task.design_plan.components}
    return [by_id[i] for i in CALLS]


def test_a_design_compiled_part_by_part_is_one_structure_in_both_files(task):
    update, prompts = document(task, calls(task))
    final = update["final"]
    design = Design.model_validate(final["spec"])
    jsonschema.validate(final["spec"], Design.json_schema())
    assert final["markdown"] == render_design(design, task.title).strip()
    assert [c.status for c in design.components] == ["written"] * 8
    assert design.components[0].technology == "AWS DataSync and AWS IoT Core"
    assert design.plan == [  # the vote is not a step
        "Set up the vehicle upload at the four depots",
        "Deploy the safety-event stream before the first drives",
        "Run the batch processing on the first nightly uploads",
    ]
    # 360 TB x 23 + 360 TB x 0.5 + 858 GPU-hours x 4 + 360 TB x 2
    assert design.costs.total_usd_per_month == 12_612 and design.costs.within_budget
    assert [r.id for r in design.requirements] == [r.id for r in task.requirements]
    assert all(r.status == "met" for r in design.requirements)
    assert next(r for r in design.requirements if r.id == "R10").met_by == "costs"
    # 8 components, the 20 parts of 11 requirements, 3 estimates, 4 prices, plan, summary
    assert len(prompts) == 37 and update["usage"]["DJE"]["documentation"]["calls"] == 37
    assert "Use AWS Batch for the nightly jobs" in prompts[0]  # the owner's memory
    assert "| R5: Faces and licence plates" in final["markdown"]
    quality = design_quality(task, design, final["markdown"])
    assert quality["junk_lines"] == [] and quality["components_justified"] == 8
    assert quality["addressed"] == [r.id for r in task.requirements]


def test_an_estimate_is_one_of_the_derivations_its_figures_allow(task):
    """12-07's default meeting wrote "80 TB/day recorded by the fleet + 30 days + 12 TB/day
    ..." for the storage held and "2 weeks x 1000 hours per month" for the GPU-hours: the
    model now chooses among the products of the figures it is shown whose units give the
    estimate's, each with its result; the only one is taken without a call."""
    shown = ["- 12,000 GB/day uploaded", "- unblurred raw data deleted after 30 days"]
    ((held, result),) = derivations(shown, "TB")  # GB to TB by the units' sizes
    assert held == "12,000 GB/day uploaded x 30 days" and result == pytest.approx(360)
    ((moved, result),) = derivations(shown, "TB per month")
    assert moved == "12,000 GB/day uploaded x 30 days per month" and result == pytest.approx(360)
    gpu = ["- retraining every two weeks", "- about 400 A100 GPU-hours per training run"]
    ((derivation, result),) = derivations(gpu, "GPU-hours per month")
    assert derivation == "400 A100 GPU-hours per training run / 2 weeks x 4.29 weeks per month"
    assert round(result) == 858  # 400 / 2 x 4.29
    update, prompts = document(task, calls(task))
    storage, gpu_estimate = Design.model_validate(update["final"]["spec"]).estimates[:2]
    assert storage.value == 360 and storage.derivation == f"{RAW_HELD} = 360 TB"
    assert gpu_estimate.value == 858 and gpu_estimate.derivation.endswith(
        "= 858 GPU-hours per month"
    )
    asked = [p for p in prompts if "## Part: resource estimates" in p]
    assert len(asked) == 3 and not any("GPU training (GPU-hours" in p for p in asked)
    assert f"- {RAW_HELD} = 360 TB" in asked[0]
    assert "- 80 TB/day recorded by the fleet x 30 days = 2,400 TB" in asked[0]


def test_an_estimate_off_the_list_is_asked_again_then_left_open(task):
    made_up = chosen("80 TB/day recorded by the fleet + 30 days + 12 TB/day")
    tail = [made_up, made_up, *ESTIMATES[1:], *PRICES[1:], PLAN, SUMMARY]
    update, prompts = document(task, calls(task, tail=tail))
    assert sum('"derivation" must be one of the listed derivations' in p for p in prompts) == 1
    design = Design.model_validate(update["final"]["spec"])
    assert design.estimates[0].value is None
    assert design.estimates[0].open_because == "no derivation was chosen"
    assert "| Storage held | - | _open: no derivation was chosen_ |" in update["final"]["markdown"]


def test_an_estimate_no_figures_give_is_open_without_a_call(task, tmp_path):
    """In vCPU-hours the batch compute has no derivation: the brief gives no figure of
    machine time. The estimate says so, and its cost line is not asked about."""

    def in_vcpu_hours(data: dict) -> None:
        compute = next(e for e in data["design"]["estimates"] if e["id"] == "compute")
        compute["unit"] = "vCPU-hours per month"

    vcpu = load_task(str(task_file(tmp_path, in_vcpu_hours)))
    tail = [ESTIMATES[0], ESTIMATES[2], PRICES[0], PRICES[2], PRICES[3], PLAN, SUMMARY]
    update, prompts = document(vcpu, calls(vcpu, tail=tail))
    compute_estimate = Design.model_validate(update["final"]["spec"]).estimates[2]
    assert compute_estimate.value is None
    assert compute_estimate.open_because == (
        "no figures of the brief multiply into vCPU-hours per month"
    )
    assert not any('"Compute" cost line' in p for p in prompts)


def test_without_estimates_no_cost_is_asked_and_a_partial_total_is_not_within_budget(task):
    none = chosen("TB per month")
    update, prompts = document(task, calls(task, tail=[none] * 6 + [PRICES[2], PLAN, SUMMARY]))
    design = Design.model_validate(update["final"]["spec"])
    assert sum("## Part: unit price" in p for p in prompts) == 1  # the GPU-hours'
    assert [c.usd_per_month for c in design.costs.lines] == [None, None, 3432, None]
    assert design.costs.within_budget is None
    lines = [CostLine(label="Storage", usd_per_month=4), CostLine(label="Compute")]
    partial = Costs.model_validate(parts.total(lines, 45_000))
    assert partial.total_usd_per_month == 4 and partial.within_budget is None
    assert "1 of 2 lines not estimated" in parts.cost_sentence(partial)


def test_a_plan_keeps_the_attempt_with_more_usable_steps(task):
    """12-06's replay: the first plan had one usable step more than its retry."""
    first = ["Deploy AWS DataSync at the four depots", "Index the uploads on AWS Batch"]
    second = ["Deploy AWS DataSync ...", "Storage and retention (Amazon S3) ..."]
    plans = [answer(json.dumps({"steps": steps})) for steps in (first, second)]
    update, _ = document(task, calls(task, tail=[*FIGURES, *plans, SUMMARY]))
    assert Design.model_validate(update["final"]["spec"]).plan == first


def test_a_step_cut_at_its_length_loses_its_unfinished_phrase(task):
    """12-06's replay f: the schema's length stopped a step at "... Logs before the"."""
    cut = (
        "Set up the anonymisation and access control on OpenCV on AWS Batch and Amazon "
        "CloudWatch Logs before the first drives of the fleet begin"
    )[: parts.STEP_CHARS]
    steps = [cut, "Deploy AWS DataSync at the four depots", "Index the uploads on AWS Batch"]
    plan = answer(json.dumps({"steps": steps}))
    update, _ = document(task, calls(task, tail=[*FIGURES, plan, SUMMARY]))
    first = Design.model_validate(update["final"]["spec"]).plan[0]
    assert first.endswith("Amazon CloudWatch Logs")


def test_texts_cut_at_their_length_end_at_a_whole_clause_or_phrase():
    """What 12-07's default meeting printed: pros stopped mid-word by the schema's length, a
    reason ending in a comma, a summary that stopped mid-sentence."""
    cut = [
        "It allows for easy management of data across multiple regions and provides fine-",
        "It allows for easy collaboration between different teams to work together on the",
        "SageMaker Training provides a robust framework for training machine learning onH",
    ]
    assert [parts.whole_clauses(c, parts.ITEM_CHARS) for c in cut] == [
        "It allows for easy management of data across multiple regions",
        "It allows for easy collaboration between different teams to work together",
        "SageMaker Training provides a robust framework",
    ]
    assert (
        parts.whole_clauses("It scales without losing data,", 160)
        == "It scales without losing data"
    )
    summary = (
        "This pipeline blurs faces before any person sees the data. It uses AWS DataSync for "
        "vehicle upload, while DVC on Amazon S3 for dataset and labelling storage and"
    )
    assert parts.whole_sentences(summary, parts.SUMMARY_CHARS) == (
        "This pipeline blurs faces before any person sees the data."
    )


def test_a_monthly_cost_is_its_estimate_at_a_unit_price(task):
    """12-07's default meeting priced storage it had not estimated ("1 TB x 45 USD per TB",
    printed as USD 45,000): a cost line is now its estimate times the unit price the model
    gives, computed here; a line whose estimate is missing is not asked about, and a price
    that is not a positive number is asked for again, then left missing."""
    compute_missing = chosen("TB")
    free = answer(json.dumps({"price": 0}))
    tail = [ESTIMATES[0], compute_missing, compute_missing, ESTIMATES[2], PRICES[0], free, free]
    update, prompts = document(task, calls(task, tail=[*tail, PRICES[3], PLAN, SUMMARY]))
    priced = [p for p in prompts if "## Part: unit price" in p]
    assert sum('"price" needs a positive number' in p for p in prompts) == 1
    assert "in USD per TB per month" in priced[0] and "- Storage held: 360 TB" in priced[0]
    assert not any('"Compute" cost line' in p for p in prompts)
    lines = Design.model_validate(update["final"]["spec"]).costs.lines
    assert [line.usd_per_month for line in lines] == [8280, None, None, 720]
    assert lines[0].derivation == "360 TB x 23 USD per TB per month = 8,280"
    assert lines[3].derivation == "360 TB per month x 2 USD per TB = 720"
    assert parts.price_unit("GPU-hours per month") == "USD per GPU-hour"
    pattern = parts.price_schema()["properties"]["price"]["pattern"]
    assert re.fullmatch(pattern, "12.5") and re.fullmatch(pattern, "0.048")
    assert not any(re.fullmatch(pattern, p) for p in ("200.000000000", "45000"))


def test_a_component_that_cannot_be_used_is_asked_again_then_left_open(task):
    """The first component names no technology of the task's, twice: it is open, its
    requirements are open, and every other part is written."""
    first = slots(task)[0]
    bad = [component(first, technology="DEA cloud")] * 2
    update, prompts = document(task, calls(task, components={first.id: bad}))
    design = Design.model_validate(update["final"]["spec"])
    assert design.components[0].status == "open"
    assert '"technology" must be one of: AWS DataSync' in prompts[1]  # the retry says why
    # ... and asks afresh, without the answer it refused (a small model copies what it is shown)
    assert "## Part 1: Vehicle upload" in prompts[1] and "DEA cloud" not in prompts[1]
    assert {r.id for r in design.requirements if r.status == "open"} == {"R1", "R4", "R11"}
    assert all(c.status == "written" for c in design.components[1:]) and design.summary
    assert '_Open: no usable answer ("technology" must be one of' in update["final"]["markdown"]


def test_a_reason_copied_twice_leaves_the_reason_open_and_keeps_the_technology(task):
    """12-07's make run: two components' reasons copied the brief twice, and the whole
    component was left open, its technology and its requirements' how-sentences with it.
    The technology stands, the reason is marked open, and its requirements are asked about."""
    first = slots(task)[0]
    copied = (
        "Ingestion supports both paths: overnight depot Wi-Fi offload of about 12 TB/day "
        "(60 GB per vehicle) and a cellular path."
    )
    update, prompts = document(
        task, calls(task, components={first.id: [component(first, why=copied)] * 2})
    )
    design = Design.model_validate(update["final"]["spec"])
    kept = design.components[0]
    assert (kept.status, kept.technology, kept.why) == ("written", first.options[0], "")
    assert "copies the brief" in kept.open_because and '"why" cannot' not in prompts[0]
    assert {"R1", "R4", "R11"} <= {r.id for r in design.requirements if r.status == "met"}
    markdown = update["final"]["markdown"]
    assert f"### 1. Vehicle upload: {first.options[0]}" in markdown
    assert '- **Why:** _open: "why" copies the brief' in markdown
    assert design_quality(task, design, markdown)["components_justified"] == 7


def test_a_reason_repeated_from_another_component_is_asked_again(task):
    """The 0.5B model gave six of seven components one reason (12-06): the second is asked
    for its own, and kept as written when the retry still repeats it."""
    first, second = slots(task)[:2]
    echoed = "It handles camera counts and blurring before people see the data."
    components = {
        first.id: [component(first, why=echoed)],
        second.id: [component(second, why=echoed)] * 2,
    }
    update, prompts = document(task, calls(task, components=components))
    design = Design.model_validate(update["final"]["spec"])
    assert sum('"why" repeats the reason given for another part' in p for p in prompts) == 1
    asked = sum(len(parts.requirement_parts(task, rid)) for rid in first.meets)
    assert "say why Amazon Kinesis Data Streams suits Safety-event stream" in prompts[asked + 2]
    assert design.component(second.id).status == "written"


def test_a_component_is_asked_about_the_requirements_it_meets(task):
    """A component's prompt names its requirements; a sentence on how one is met is asked
    with the requirement's own text (its figures), and a copy of it is refused; an estimate
    sees the brief's figures closest to what it asks."""
    _, prompts = document(task, calls(task))
    assert "It must meet R1 (depot Wi-Fi and cellular upload paths); R4 (" in prompts[0]
    assert "Cellular usage stays within 5 GB per vehicle per month." in prompts[2]
    storage = next(p for p in prompts if "resource estimates" in p)
    assert f"- {RAW_HELD} = 360 TB" in storage  # from the two figures closest to its ask
    assert "200 test vehicles" not in storage  # the 0.5B model multiplied the first four


def test_a_requirement_is_asked_about_part_by_part_and_a_part_left_unsaid_is_shown(task):
    """12-07: asked for the whole of R11, the 0.5B model said how the vehicles keep clips
    until acknowledged, and nothing of checksums or 99.9%. Each part is asked on its own;
    a part without a usable sentence of its own is named in the row."""
    assert parts.requirement_parts(task, "R11") == [
        "vehicles keep clips until the cloud acknowledges them",
        "onboard data is deleted only after a checksum-verified upload",
        "the safety path is 99.9% available",
    ]
    assert parts.requirement_parts(task, "R3")[1] == (
        "uploaded data is decoded, anonymised, indexed and searchable within 12 hours"
    )
    assert len(parts.requirement_parts(task, "R6")) == 1  # ", with no transfer" stays
    ack = how("R11", "AWS IoT Core keeps each clip on the car until the cloud sends an ack.")
    nines = how("R11", "AWS IoT Core runs the event path in two zones for 99.9%.")
    hows = {"R11": [[ack], [ack, ack], [nines]]}  # the second part's answers repeat the first
    update, prompts = document(task, calls(task, hows=hows))
    asked = [p for p in prompts if p.startswith("## Part: how Vehicle upload meets R11")]
    assert len(asked) == 4 and 'one part of it: "the safety path is 99.9% available"' in asked[3]
    assert "checksum" not in asked[3]  # a part alone: the 0.5B model copied the others too
    assert '"how" repeats what was said for another part of the requirement' in asked[2]
    row = next(
        r for r in Design.model_validate(update["final"]["spec"]).requirements if r.id == "R11"
    )
    assert row.status == "met" and row.how == " ".join(
        json.loads(a.content)["how"] for a in (ack, nines)
    )
    assert row.open_parts == ["onboard data is deleted only after a checksum-verified upload"]
    assert (
        "_Not said: onboard data is deleted only after a checksum-verified upload._"
        in (update["final"]["markdown"])
    )


def test_a_how_sentence_that_only_names_its_technology_is_asked_again(task):
    """12-07's replay: "Google Cloud Dataflow runs on Google Cloud Dataflow." for R3."""
    said = "AWS DataSync and AWS IoT Core handle the vehicle upload for R4."
    update, prompts = document(task, calls(task, hows={"R4": [how("R4", said), how("R4")]}))
    assert any(
        '"how" says nothing of what AWS DataSync and AWS IoT Core does' in p for p in prompts
    )
    row = next(
        r for r in Design.model_validate(update["final"]["spec"]).requirements if r.id == "R4"
    )
    assert row.how == HOW["R4"][0]
    twice = (
        "AWS DataSync and AWS IoT Core runs on AWS DataSync and AWS IoT Core, which is a "
        "cloud-based platform for processing and analyzing data."
    )
    update, prompts = document(task, calls(task, hows={"R4": [how("R4", twice), how("R4")]}))
    assert any('"how" names AWS DataSync and AWS IoT Core twice' in p for p in prompts)


def test_a_how_sentence_without_the_figure_its_part_keeps_to_is_asked_again(task):
    """12-07's make run: R12's "cleared within 24 hours" was met by "help manage and
    optimize data replication across multiple regions". Asked again with the figure named;
    a second answer without it stands, and a part with no figure asks for none."""
    vague = "Amazon S3 Cross-Region Replication and Amazon CloudWatch help clear any backlog."
    answers = [how("R12", part=0), how("R12", vague), how("R12", part=1), how("R12", part=2)]
    update, prompts = document(task, calls(task, hows={"R12": answers}))
    asked = '"how" gives none of the figures of this part (24 hours); say what Amazon S3'
    assert sum(asked in p for p in prompts) == 1
    rows = {r.id: r for r in Design.model_validate(update["final"]["spec"]).requirements}
    assert "24 h after an outage" in rows["R12"].how
    # the second answer states the figure and nothing else ("keep to 24 hours", 12-07's
    # replay): it says nothing, so the first stands
    hollow = "Amazon S3 Cross-Region Replication and Amazon CloudWatch keep to 24 hours."
    answers = [how("R12", part=0), how("R12", vague), how("R12", hollow), how("R12", part=2)]
    update, _ = document(task, calls(task, hows={"R12": answers}))
    rows = {r.id: r for r in Design.model_validate(update["final"]["spec"]).requirements}
    assert vague in rows["R12"].how and hollow not in rows["R12"].how


def test_a_figure_of_the_brief_copies_nothing(task):
    """12-07's replay: "... handle cellular usage within 5 GB per vehicle per month." was
    refused as a copy of R4 for its figure's words; stating a figure is no copy."""
    said = "AWS DataSync and AWS IoT Core handle cellular usage within 5 GB per vehicle per month."
    update, _ = document(task, calls(task, hows={"R4": [how("R4", said)]}))
    rows = {r.id: r for r in Design.model_validate(update["final"]["spec"]).requirements}
    assert rows["R4"].how == said


def test_a_how_sentence_is_asked_without_the_proposal_and_opens_with_its_technology(task):
    """The 0.5B model copied the proposal's phrases into every how-sentence and answered
    with documentation links (12-06): the question leaves the proposal out, and its schema
    holds the sentence to its technology's name and no link."""
    _, prompts = document(task, calls(task))
    hows = [p for p in prompts if p.startswith("## Part: how ")]
    assert hows and all("The accepted proposal" not in p for p in hows)
    assert all("The accepted proposal" in p for p in prompts if p not in hows)
    pattern = parts.how_schema("Amazon S3 (EU)")["properties"]["how"]["pattern"]
    assert re.fullmatch(pattern, "Amazon S3 (EU) keeps 12 TB/day in eu-central-1 only.")
    for answer in (
        "The mechanism it uses is Amazon S3, and the figure it keeps to is 5 minutes.",
        "Amazon S3 (EU) https://docs.aws.amazon.com/s3/latest/userguide/data-lake-sync.html",
    ):
        assert not re.fullmatch(pattern, answer)


@settings(max_examples=40, deadline=None)
@given(data())
def test_every_derivation_offered_gives_its_result_in_the_estimates_unit(drawn):
    """Whatever figures an estimate is shown, each derivation offered has units that give
    the estimate's, and its result is what it says."""
    figures = drawn.draw(lists(sampled_from(FIGURE_TEXTS), min_size=1, max_size=6, unique=True))
    unit = drawn.draw(sampled_from(sorted({e.unit for e in TASK.design.estimates})))
    for derivation, result in derivations(figures, unit):
        assert dimension_problem(derivation, unit) == ""
        assert in_unit(derivation, unit) == pytest.approx(result) and result > 0


def test_a_plan_step_is_held_to_an_action_without_the_prompts_placeholder():
    pattern = parts.plan_schema(ACTION_VERBS)["properties"]["steps"]["items"]["pattern"]
    assert re.fullmatch(
        pattern, "Set up the vehicle upload on AWS IoT Core before the first drives"
    )
    for written in ("Set up the vehicle upload on AWS IoT Core before ....", "MLA: ACCEPT."):
        assert not re.fullmatch(pattern, written)


def test_a_votes_verdict_kept_in_memory_is_no_reason_for_a_component(task):
    why = "To ensure the integrated proposal violates the requirement that the volumes add up"
    assert "verdict" in junk_reason(why, task)
    assert not junk_reason("S3 replication keeps a second copy in eu-west-1", task)


def test_a_sentence_copied_from_the_brief_does_not_say_how(task):
    copied = "Safety events must appear on the safety-operations dashboard within 5 minutes of occurring."
    update, prompts = document(task, calls(task, hows={"R2": [how("R2", copied)] * 2}))
    design = Design.model_validate(update["final"]["spec"])
    assert any("copies the brief" in p for p in prompts)
    assert next(r for r in design.requirements if r.id == "R2").status == "open"
    assert design.component("safety_stream").status == "written"  # the rest of it is kept


def test_what_the_default_meeting_wrote_on_12_06_is_asked_again_or_trimmed(task):
    """A web address, the question repeated and another script are asked about again (and
    the requirement stays open); a pro cut off at its length keeps its whole clauses."""
    question = (
        "Component: Model training, on Amazon SageMaker Training. Requirement R9 of the brief: "
        "biweekly retraining and the regression gate."
    )
    hows = {
        "R6": [how("R6", "https://docs.aws.amazon.com/s3/latest/userguide/lifecycle-rules.html")]
        * 2,
        "R9": [how("R9", question)] * 2,
        "R3": [how("R3", "Dataflow runs批 each nightly job over the uploads in under 12 hours.")]
        * 2,
    }
    training = next(s for s in slots(task) if s.id == "training")
    cut = "It scales on demand for the biweekly retraining, which makes it suitable for a very"
    agent = "Data Engineering Agent's pipeline handles various types of camera counts"
    components = {training.id: [component(training, pros=[cut[:80], agent])]}
    update, prompts = document(task, calls(task, components=components, hows=hows))
    assert any('"how" is a web address' in p for p in prompts)
    assert any('"how" repeats the question' in p for p in prompts)
    assert any('"how" mixes in another script' in p for p in prompts)
    design = Design.model_validate(update["final"]["spec"])
    assert {r.id for r in design.requirements if r.status == "open"} == {"R3", "R6", "R9"}
    # cut to its whole clauses; a pro that names an agent of the meeting is dropped
    assert design.component("training").pros == ["It scales on demand for the biweekly retraining"]


def test_a_figure_the_brief_contradicts_is_asked_about_then_listed(task):
    wrong = "Lifecycle rules delete unblurred raw data after 60 days."
    update, prompts = document(task, calls(task, hows={"R7": [how("R7", wrong)] * 2}))
    assert any('says "60 days" where the brief has' in p for p in prompts)
    design = Design.model_validate(update["final"]["spec"])
    assert [(c.stated, c.brief) for c in design.conflicts] == [
        ("60 days", "unblurred raw data deleted after 30 days")
    ]
    assert "60 days, but the brief says unblurred raw data deleted" in update["final"]["markdown"]


def test_todays_document_is_junk_line_by_line(task):
    bad = [line for line in TODAYS_DESIGN.splitlines() if not line.startswith("#")]
    assert all(junk_reason(line, task) for line in bad[1:-1])
    assert len(junk_lines(task, TODAYS_DESIGN)) == 6
    assert unit_errors("GPU-hours: 2 GB/h.") == ["GPU-hours: 2 GB/h"]
    assert unit_errors("GPU-hours: 800 GPU-hours, storage: 400 TB") == []


def test_conflicts_need_the_figures_words_and_its_kind_of_quantity(task):
    assert figure_conflicts(task, "x", "Unblurred raw data is deleted after 60 days.")
    assert not figure_conflicts(task, "x", "Unblurred raw data is deleted after 30 days.")
    assert not figure_conflicts(task, "x", "Raw drives are indexed within 12 hours.")
    assert not figure_conflicts(task, "x", "Raw data: 60 TB of disks")  # another kind


def test_requirements_count_only_in_the_designs_own_words(task):
    rows = [
        {"id": "R2", "requirement": "x", "met_by": "safety_stream", "status": "met", "how": h}
        for h in (
            "Each safety event is streamed to the dashboard and shown in under 5 min.",
            "Safety events must appear on the safety-operations dashboard within 5 minutes of "
            "occurring.",
        )
    ]
    own, copied = (
        Design(requirements=[Design.model_fields["requirements"].annotation.__args__[0](**r)])
        for r in rows
    )  # type: ignore[union-attr]
    assert addressed_in_own_words(task, own) == ["R2"]
    assert addressed_in_own_words(task, copied) == []


def test_the_accepted_proposal_is_the_integrators_digest_without_votes_or_echoes(task):
    transcript = [
        {"speaker": "KIA", "content": "Old digest: use HDFS everywhere for the fleet."},
        {"speaker": "CDA", "content": "BOA should address next."},
        {
            "speaker": "KIA",
            "content": "Meeting notes so far (oldest first):\n- Kinesis streams safety events\n"
            "ACCEPT.\n- Batch jobs blur faces and plates nightly",
        },
        {"speaker": "BOA", "content": "ACCEPT. Fine."},
        {"speaker": "KIA", "phase": "consensus", "content": "ACCEPT\nThe digest covers it all."},
    ]
    assert accepted_proposal(task, transcript) == (
        "- Kinesis streams safety events\n- Batch jobs blur faces and plates nightly"
    )


def test_once_workers_have_proposed_the_proposal_is_their_latest_words(task):
    """The integrator of 12-06 copied the last worker's list: voters objected to R5 (the
    anonymisation BOA had proposed) being left out, round after round."""
    said = {
        "BOA": "Anonymisation: Brighter AI blurs faces and plates in AWS Batch before labelling.",
        "DEA": "Vehicle upload: AWS DataSync at each depot, IoT Core for event clips.",
    }
    transcript = [
        {"speaker": "BOA", "phase": "discussion", "content": "Blurring matters most to me."},
        {"speaker": "BOA", "phase": "proposals", "content": "Old: blur later, in the cloud."},
        *({"speaker": w, "phase": "proposals", "content": text} for w, text in said.items()),
        {"speaker": "KIA", "phase": "proposals", "content": "- " + said["DEA"]},
        {"speaker": "DEA", "phase": "consensus", "content": "REJECT: R5 is not met."},
    ]
    assert accepted_proposal(task, transcript) == "\n".join(f"- {t}" for t in said.values())


def test_a_copied_placeholder_is_cut_and_a_summary_copied_from_the_proposal_asked_again(task):
    """12-06's replay: the plan copied the prompt's "before ...", and the summary strung the
    proposal's lines together, cut off mid-sentence ("Batch processing (AWS,")."""
    said = "Anonymisation: OpenCV on AWS Batch blurs faces and licence plates before labelling."
    transcript = [{"speaker": "BOA", "phase": "proposals", "content": said}]
    steps = [
        "Set up the vehicle upload on AWS DataSync and AWS IoT Core before ...",
        "Deploy the safety-event stream on Amazon Kinesis Data Streams before ....",
        "Run the batch processing on AWS Batch over the first nightly uploads",
    ]
    copied = answer(json.dumps({"summary": said + " Batch processing on AWS Batch."}))
    tail = [*FIGURES, answer(json.dumps({"steps": steps})), copied, SUMMARY]
    update, prompts = document(task, calls(task, tail=tail), transcript=transcript)
    design = Design.model_validate(update["final"]["spec"])
    assert design.plan[:2] == [
        "Set up the vehicle upload on AWS DataSync and AWS IoT Core",
        "Deploy the safety-event stream on Amazon Kinesis Data Streams",
    ]
    assert '"summary" copies the proposal' in prompts[-1]
    assert design.summary == json.loads(SUMMARY.content)["summary"]


def test_a_summary_that_only_lists_the_components_is_asked_again(task):
    """12-07's make run summarised its design as five titles strung together."""
    titles = "Anonymisation and Access Control, Vehicle upload, Safety-event stream on Amazon S3."
    listed = answer(json.dumps({"summary": titles}))
    update, prompts = document(task, calls(task, tail=[*FIGURES, PLAN, listed, SUMMARY]))
    assert '"summary" only lists the components' in prompts[-1]
    assert Design.model_validate(update["final"]["spec"]).summary.startswith("A managed EU")


@pytest.mark.parametrize(
    ("said", "usable"),
    [("USD 90,000", False), ("USD 12,612", True), ("USD 45,000", True)],
)
def test_a_summary_says_no_sum_the_design_does_not_cost(task, said, usable):
    """12-07's replay: the summary gave the budget, USD 45,000, as the monthly cost of a
    design whose one priced line came to USD 4,500, not held against the budget. Here the
    lines sum to USD 12,612, held against the budget, so the budget may be named."""
    text = f"The pipeline blurs each drive before labelling and costs {said} a month in all."
    update, prompts = document(
        task, calls(task, tail=[*FIGURES, PLAN, answer(json.dumps({"summary": text})), SUMMARY])
    )
    summary = Design.model_validate(update["final"]["spec"]).summary
    assert (summary == text) is usable
    assert (f'"summary" says {said}, which is no cost of the design' in prompts[-1]) is not usable


def test_a_pro_that_copies_the_brief_is_no_pro(task):
    """12-07's replay: a component whose reason was open listed R11's title as a con."""
    first = slots(task)[0]
    cons = ["No lost safety events, verified uploads", "two products to run"]
    update, _ = document(task, calls(task, components={first.id: [component(first, cons=cons)]}))
    assert Design.model_validate(update["final"]["spec"]).components[0].cons == cons[1:]


def test_a_pro_cut_short_on_a_verb_wanting_its_object_is_dropped(task):
    """12-07's make run printed "Pros: Data synchronization allows"."""
    first = slots(task)[0]
    pros = ["Data synchronization allows for", "keeps each clip until it is acknowledged"]
    update, _ = document(task, calls(task, components={first.id: [component(first, pros=pros)]}))
    assert Design.model_validate(update["final"]["spec"]).components[0].pros == pros[1:]


def test_a_figure_counts_as_one_word_however_many_of_its_spellings_match(task):
    from ima.core.ngrams import words
    from ima.meeting.design.answers import without_figures

    said = without_figures(task, "The path keeps 99.9% and clears it in 24 hours overnight.")
    assert words(said) == [
        "the",
        "path",
        "keeps",
        "figure",
        "and",
        "clears",
        "it",
        "in",
        "figure",
        "overnight",
    ]


def test_a_field_name_left_as_a_pro_or_con_is_residue(task):
    """12-07's make run: lakeFS's pros ended with "cons" and its cons with "why", which
    design.md showed as "storing raw; cons"."""
    first = slots(task)[0]
    pros, cons = ["versioned snapshots", "cons"], ["one more service to run", "why"]
    answers = {first.id: [component(first, pros=pros, cons=cons)]}
    update, _ = document(task, calls(task, components=answers))
    written = Design.model_validate(update["final"]["spec"]).components[0]
    assert (written.pros, written.cons) == (pros[:1], cons[:1])
    assert junk_lines(task, "- **Pros:** storing raw; cons") == ["Pros: storing raw; cons"]


def test_a_proposal_is_its_statements_not_the_headings_of_its_list(task):
    """BOA's proposal of 12-06 opened with a line that only opens a list: voters were shown
    "1. **Anonymisation and Access Control:**" and nothing it proposed."""
    boa = (
        "BOA proposes the following components for their own area (services, sizes):\n\n"
        "1. **Anonymisation and Access Control:**\n"
        "   - **Blurring:** OpenCV on AWS Batch blurs faces and plates before labelling."
    )
    transcript = [{"speaker": "BOA", "phase": "proposals", "content": boa}]
    assert accepted_proposal(task, transcript) == (
        "- Blurring: OpenCV on AWS Batch blurs faces and plates before labelling."
    )


@pytest.mark.parametrize("bad_json, status", [(1, "written"), (2, "open")])
def test_the_scripted_meeting_documents_a_design_or_leaves_components_open(
    run_graph, bad_json, status
):
    out = run_graph(model=f"scripted:bad_json={bad_json}")
    design = Design.model_validate(out["final"]["spec"])
    assert {c.status for c in design.components} == {status}
    assert design.plan and design.summary and design.costs.total_usd_per_month
    assert out["status"] == "finalized"
