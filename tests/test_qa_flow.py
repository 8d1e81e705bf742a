"""QA generation and gold-path verification against the loopback fake, on a demo reference graph."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from schemas.config import load_settings
from testing.permissive_profiles import store_one_each_way
from warehouse.db import Warehouse

DEMO = Path(__file__).resolve().parent.parent / "flows" / "demo"


def _prompt(body) -> str:
    return "\n".join(str(m.get("content")) for m in body["messages"])


def _candidates(body) -> dict[str, list[str]]:
    """P1: A -> B -> C lines of a candidates prompt."""
    return {m.group(1): m.group(2).split(" -> ") for m in re.finditer(r"^(P\d+): (.+)$", _prompt(body), re.M)}


def _seed(body) -> str:
    return re.search(r"Candidate paths starting at (['\"])(.+?)\1;", _prompt(body)).group(2)


def good_pick(body):
    pid, nodes = sorted(_candidates(body).items())[0]
    return {"path_id": pid, "question": f"Starting from {_seed(body)}, which entity does this chain of relations lead to?"}


def leaky_then_good(body):
    pid, nodes = sorted(_candidates(body).items())[0]
    if "earlier attempts were rejected" in _prompt(body):
        return good_pick(body)
    return {"path_id": pid, "question": f"Is {nodes[-1]} reached from {_seed(body)}?"}


@pytest.fixture
def settings(fake_llm, tmp_path):
    roles = {r: {"base_url": fake_llm.base_url, "model": "fake-model", "max_retries": 1, "timeout_s": 10}
             for r in ("generator", "verifier")}
    return load_settings(data_dir=tmp_path, roles=roles)


@pytest.fixture
def cs_graph(prefect_harness, settings):
    from flows.graphs import import_graphs

    out = import_graphs(files={"cs": str(DEMO / "graphs" / "cs.jsonl")}, settings=settings)
    assert out["imported"]["cs"]["entities"] > 60
    return out


@pytest.fixture
def askable_cs(cs_graph, settings):
    """The demo cs graph with the user's profiles saying every relation names one thing each way, as
    ``hopforge graph profiles import`` would store them: tests of retries, outages, resumes and batching count
    jobs and questions, and with the shipped lexicon most seeds and 3+ hop jobs of the small demo graph find no
    askable path (what the lexicon lets through is tested in test_qa_checks and test_factory)."""
    from tasks.graph.importers import read_triples

    kg = read_triples(DEMO / "graphs" / "cs.jsonl", "cs").to_graph()
    with Warehouse(settings.warehouse_path) as wh:
        store_one_each_way(wh, [kg])
    return cs_graph


def test_candidates_mode_retry_with_feedback_then_accept(askable_cs, settings, fake_llm):
    from flows.qa import generate_qa
    from warehouse.profiles import write_user_profiles

    # every relation can be asked, except the ways out of IBM: a company builds, releases and employs many
    many_out_of_ibm = {"built": {"objects_per_subject": "many", "subjects_per_object": "one"},
                       "released": {"objects_per_subject": "many", "subjects_per_object": "one"},
                       "worked at": {"objects_per_subject": "one", "subjects_per_object": "many"}}
    with Warehouse(settings.warehouse_path) as wh:
        write_user_profiles(wh, many_out_of_ibm, {k: k for k in many_out_of_ibm}, run_id="test-profiles")
    fake_llm.add(schema_name="qa_pick_path", reply=leaky_then_good)
    fake_llm.add(schema_name="qa_judgement", reply={"valid": True, "reason": "clear and multi-hop"})
    out = generate_qa(domains=["cs"], n_seeds=4, modes=["candidates"], settings=settings)
    assert out["accepted"] == 4
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        # IBM ranks first, but every relation out of it names one of many: the next seed in rank order is taken
        assert "IBM" not in [r["node"] for r in wh.query("SELECT node FROM seeds")]
        atts = wh.query("SELECT attempt, status, reject_reason FROM qa_attempts ORDER BY seed, attempt")
        assert [(a["attempt"], a["status"], a["reject_reason"]) for a in atts[:2]] == [
            (1, "rejected", "leaks_answer"), (2, "accepted", None)]
        qa = wh.query("SELECT * FROM qa")
        assert len(qa) == 4 and all(q["split"] in ("train", "validation", "test") for q in qa)
        yields = wh.query("SELECT stage, reason, sum(count) AS n FROM qa_yields GROUP BY stage, reason")
    # the retry prompt carried the failed check's feedback
    retry = [r for r in fake_llm.requests if r.json and "earlier attempts were rejected" in _prompt(r.json)]
    assert retry and "reveals the answer" in _prompt(retry[0].json)
    n = {(y["stage"], y["reason"]): y["n"] for y in yields}
    assert n[("seeds", "")] == 4 and n[("accepted", "")] == 4 and n[("checks", "leaks_answer")] == 4


def test_the_batch_window_is_sized_from_the_mean_batch_of_a_domain(askable_cs, settings, fake_llm, monkeypatch):
    # 5 jobs a domain in batches of 4 are a batch of 4 and one of 1: the window must count on batches of 2-3 jobs
    # (the typical size of the batches cut from them), not of 4, or it holds too few jobs to keep the endpoint busy.
    from flows.batches import _Runner
    from flows.qa import generate_qa

    sizes: list[int] = []
    in_flight = _Runner.in_flight

    def spy(self, batch_size, concurrency):
        sizes.append(batch_size)
        return in_flight(self, batch_size, concurrency)

    monkeypatch.setattr(_Runner, "in_flight", spy)
    fake_llm.add(schema_name="qa_pick_path", reply=good_pick)
    fake_llm.add(schema_name="qa_judgement", reply={"valid": True, "reason": "clear and multi-hop"})
    out = generate_qa(domains=["cs"], n_seeds=5, modes=["candidates"], batch_size=4, settings=settings)
    assert out["accepted"] == 5
    assert sizes == [2]


def reworded_pick(body):
    """A different wording on each retry (the same question would get the same cached verdict again)."""
    out = good_pick(body)
    retries = _prompt(body).count("Attempt ")
    wordings = ["which entity does this chain of relations lead to?", "where does this chain of relations end?",
                "which entity lies at the end of these relations?", "what do these relations finally reach?"]
    return {**out, "question": f"Starting from {_seed(body)}, {wordings[retries % len(wordings)]}"}


def test_judge_reason_feeds_the_retry_and_resume_makes_no_calls(askable_cs, settings, fake_llm):
    from flows.qa import generate_qa

    fake_llm.add(schema_name="qa_pick_path", reply=reworded_pick)
    fake_llm.add(schema_name="qa_judgement", times=2, reply={"valid": False, "reason": "too vague about the relation"})
    fake_llm.add(schema_name="qa_judgement", reply={"valid": True, "reason": "ok"})
    first = generate_qa(domains=["cs"], n_seeds=2, modes=["candidates"], settings=settings)
    assert first["accepted"] == 2
    assert any("too vague about the relation" in _prompt(r.json) for r in fake_llm.requests if r.json)
    calls = fake_llm.calls()
    again = generate_qa(domains=["cs"], n_seeds=2, modes=["candidates"], settings=settings)
    assert fake_llm.calls() == calls and again["attempts"] == 0  # every job already has a final verdict


def test_free_mode_bad_paths_are_rejected_with_reasons(cs_graph, settings, fake_llm):
    from flows.qa import generate_qa

    def disconnected(body):
        names = body["response_format"]["json_schema"]["schema"]["properties"]["path"]["items"]["enum"]
        path = [names[0], names[-1]]  # the seed and the farthest rendered node: not adjacent
        return {"path": path, "question": f"What is linked to {names[0]}?", "answer": path[-1]}

    fake_llm.add(schema_name="qa_generation", reply=disconnected)
    fixed = settings.model_copy(update={"seeds": settings.seeds.model_copy(update={"refill": 0.0})})
    out = generate_qa(domains=["cs"], n_seeds=2, modes=["free"], hop_mix={"1-2": 1.0}, max_attempts=2,
                      use_judge=False, settings=fixed)  # a fixed plan: its attempts are counted
    assert out["accepted"] == 0 and out["attempts"] == 4
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        reasons = {r["reject_reason"] for r in wh.query("SELECT reject_reason FROM qa_attempts")}
    assert reasons == {"path_not_connected"}
    # the per-request schema restricted the path to the rendered subgraph's names
    schema = fake_llm.requests[0].json["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["answer"]["enum"] == schema["properties"]["path"]["items"]["enum"]


def test_garbage_generator_output_is_llm_error_not_a_crash(cs_graph, settings, fake_llm):
    from flows.qa import generate_qa

    fake_llm.add(schema_name="qa_pick_path", reply="I cannot do that")
    out = generate_qa(domains=["cs"], n_seeds=2, modes=["candidates"], max_attempts=2, settings=settings)
    assert out["accepted"] == 0
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        rows = wh.query("SELECT reject_reason, raw_text FROM qa_attempts")
    assert {r["reject_reason"] for r in rows} == {"llm_error"} and rows[0]["raw_text"] == "I cannot do that"


def test_verify_paths_records_verdicts(askable_cs, settings, fake_llm):
    from flows.qa import generate_qa, verify_paths

    fake_llm.add(schema_name="qa_pick_path", reply=good_pick)
    fake_llm.add(schema_name="qa_judgement", reply={"valid": True, "reason": "ok"})

    def verdicts(body):
        ids = body["response_format"]["json_schema"]["schema"]["properties"]["verdicts"]["items"]["properties"]["path_id"]["enum"]
        return {"verdicts": [{"path_id": i, "valid": i == "G1", "reason": "first is right"} for i in ids]}

    fake_llm.add(schema_name="gold_path_verdicts", reply=verdicts)
    generate_qa(domains=["cs"], n_seeds=3, modes=["candidates"], settings=settings)
    out = verify_paths(domains=["cs"], settings=settings)
    assert out["questions"] == 3 and out["mean_verified"] == 1.0
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        rows = wh.query("SELECT * FROM gold_path_summary")
        gp = wh.query("SELECT verdict, count(*) AS n FROM gold_paths GROUP BY verdict")
    assert len(rows) == 3 and all(r["n_candidates"] >= 1 for r in rows)
    assert {g["verdict"] for g in gp} <= {"valid", "invalid"}
    calls = fake_llm.calls()
    again = verify_paths(domains=["cs"], settings=settings)
    assert again["questions"] == 0 and fake_llm.calls() == calls  # resumable: nothing left to verify


def test_jobs_lost_to_an_outage_are_retried_on_the_next_run(askable_cs, settings, fake_llm):
    from flows.qa import generate_qa
    from testing.fake import Fault

    fake_llm.set_fault(Fault(status=500))
    down = generate_qa(domains=["cs"], n_seeds=2, modes=["candidates"], max_attempts=2, settings=settings)
    assert down["accepted"] == 0 and down["attempts"] == 4
    fake_llm.set_fault(None)
    fake_llm.add(schema_name="qa_pick_path", reply=good_pick)
    fake_llm.add(schema_name="qa_judgement", reply={"valid": True, "reason": "ok"})
    up = generate_qa(domains=["cs"], n_seeds=2, modes=["candidates"], max_attempts=2, settings=settings)
    assert up["accepted"] == 2


def test_a_judge_outage_is_not_a_verdict(askable_cs, settings, fake_llm):
    from flows.qa import generate_qa
    from testing.fake import Fault

    fake_llm.add(schema_name="qa_pick_path", reply=good_pick)
    fake_llm.add(schema_name="qa_judgement", fault=Fault(status=500))
    down = generate_qa(domains=["cs"], n_seeds=2, modes=["candidates"], max_attempts=2, settings=settings)
    assert down["accepted"] == 0 and down["attempts"] == 4
    fake_llm.reset()
    fake_llm.add(schema_name="qa_pick_path", reply=good_pick)
    fake_llm.add(schema_name="qa_judgement", reply={"valid": True, "reason": "ok"})
    up = generate_qa(domains=["cs"], n_seeds=2, modes=["candidates"], max_attempts=2, settings=settings)
    assert up["accepted"] == 2


def test_verification_lost_to_an_outage_is_redone(askable_cs, settings, fake_llm, monkeypatch):
    from typer.testing import CliRunner

    from flows import cli
    from flows.qa import generate_qa, verify_paths
    from testing.fake import Fault

    fake_llm.add(schema_name="qa_pick_path", reply=good_pick)
    fake_llm.add(schema_name="qa_judgement", reply={"valid": True, "reason": "ok"})
    generate_qa(domains=["cs"], n_seeds=2, modes=["candidates"], settings=settings)
    fake_llm.add(schema_name="gold_path_verdicts", fault=Fault(status=500), times=100)
    first = verify_paths(domains=["cs"], settings=settings)
    assert first["questions"] == 2 and first["mean_verified"] == 0 and first["lost_calls"] == 2
    # the command says so, and how to verify them again
    monkeypatch.setattr(cli, "_settings", lambda config, gguf: settings)
    said = CliRunner().invoke(cli.app, ["qa", "paths"])
    assert said.exit_code == 0, said.output
    assert "2 question(s) lost a verifier call" in said.output and "hopforge qa paths" in said.output
    fake_llm.reset()

    def all_valid(body):
        ids = body["response_format"]["json_schema"]["schema"]["properties"]["verdicts"]["items"]["properties"]["path_id"]["enum"]
        return {"verdicts": [{"path_id": i, "valid": True, "reason": "ok"} for i in ids]}

    fake_llm.add(schema_name="gold_path_verdicts", reply=all_valid)
    second = verify_paths(domains=["cs"], settings=settings)
    assert second["questions"] == 2 and second["mean_verified"] >= 1 and second["lost_calls"] == 0


def test_template_writer_questions_pass_every_gate_and_record_their_writer(cs_graph, settings, fake_llm):
    from flows.qa import generate_qa
    from tasks.qa.generate import prompt_sources
    from tasks.qa.text_gates import question_gates

    fake_llm.add(schema_name="qa_judgement", reply={"valid": True, "reason": "ok"})
    out = generate_qa(domains=["cs"], n_seeds=6, modes=["candidates"], writer="template", settings=settings)
    # The shipped lexicon decides what may be asked here: the template writer renders the profiles users get. Of
    # the 6 jobs (3 of 1-2 hops, 3 of 3+), every 1-2 hop one is written and accepted; none of the three 3+ hop
    # seeds has a 3+ hop path that can be asked in the world (few of the small demo cs graph do), so those jobs
    # are noted, never written.
    assert out["writer"] == "template" and out["accepted"] == 3 and out["by_writer"] == {"template": 3}
    hops = {(y["hop"], y["accepted"]) for y in out["yields"]}
    assert hops == {("1-2", 3), ("3+", 0)}
    # the generator was never asked: only the judge
    assert {r.json["response_format"]["json_schema"]["name"] for r in fake_llm.requests if r.json} == {"qa_judgement"}
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        rows = wh.query("SELECT question, path, writer FROM qa")
        attempts = wh.query("SELECT writer FROM qa_attempts")
    assert {a["writer"] for a in attempts} == {"template"}
    for r in rows:
        path = __import__("json").loads(r["path"])
        assert r["writer"] == "template"
        assert all(v.ok for v in question_gates(r["question"], names=path, sources=prompt_sources())), r["question"]


def test_junk_questions_are_rejected_by_the_gates_before_the_judge(cs_graph, settings, fake_llm):
    from flows.qa import generate_qa

    def junk(body):
        pid = sorted(_candidates(body))[0]
        return {"path_id": pid, "question": f"{{ '{_seed(body)}' }}, {pid} -> Question: which one? Answer: it."}

    fake_llm.add(schema_name="qa_pick_path", reply=junk)
    out = generate_qa(domains=["cs"], n_seeds=2, modes=["candidates"], max_attempts=1, writer="llm",
                      settings=settings)
    assert out["accepted"] == 0
    assert not [r for r in fake_llm.requests if r.json and "qa_judgement" in str(r.json.get("response_format"))]
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        reasons = {r["reject_reason"] for r in wh.query("SELECT reject_reason FROM qa_attempts")}
        yields = wh.query("SELECT stage, reason FROM qa_yields WHERE reason <> ''")
    assert reasons == {"has_markup"}
    # a job whose seed offers no candidate path is counted under its own reason, at the seeds stage
    from tasks.qa.candidates import NO_PATH_REASONS

    assert {(y["stage"], y["reason"]) for y in yields if y["stage"] != "seeds"} == {("checks", "has_markup")}
    assert {y["reason"] for y in yields if y["stage"] == "seeds"} <= set(NO_PATH_REASONS)


def test_a_rerun_of_finished_flows_loads_no_graph_and_makes_no_call(askable_cs, settings, fake_llm, monkeypatch):
    """A rerun of finished generate-qa / verify-paths / distill-trajectories learns from the warehouse (finished
    jobs by key, the seeds sampled before) that nothing is left, before loading a graph or building a prompt."""
    import flows.distill
    import flows.qa
    import tasks.qa.seed_plan
    import tasks.qa.seeds
    import warehouse.graphs
    from flows.distill import distill_trajectories
    from flows.qa import generate_qa, verify_paths

    fake_llm.add(schema_name="qa_pick_path", reply=good_pick)
    fake_llm.add(schema_name="qa_judgement", reply={"valid": True, "reason": "ok"})
    fake_llm.add(schema_name="gold_path_verdicts", reply=lambda b: {"verdicts": [
        {"path_id": i, "valid": True, "reason": "ok"} for i in
        b["response_format"]["json_schema"]["schema"]["properties"]["verdicts"]["items"]["properties"]["path_id"]["enum"]]})
    role = {"base_url": fake_llm.base_url, "model": "fake-model", "max_retries": 1, "timeout_s": 10}
    settings = load_settings(data_dir=settings.data_dir, roles={r: role for r in ("generator", "verifier", "teacher")})
    first = generate_qa(domains=["cs"], n_seeds=3, modes=["candidates"], settings=settings)
    assert first["accepted"] == 3
    verify_paths(domains=["cs"], settings=settings)
    distill_trajectories(domains=["cs"], kinds=["cot"], settings=settings)
    calls = fake_llm.calls()

    def forbidden(*args, **kwargs):
        raise AssertionError("a rerun with nothing to do loaded a graph or built a prompt")

    monkeypatch.setattr(flows.qa, "load_graph", forbidden)
    monkeypatch.setattr(flows.distill, "load_graph", forbidden)
    monkeypatch.setattr(warehouse.graphs, "read_snapshot", forbidden)
    monkeypatch.setattr(tasks.qa.seed_plan, "eligible_seeds", forbidden)
    monkeypatch.setattr(tasks.qa.seeds, "eligible_seeds", forbidden)
    monkeypatch.setattr(flows.qa, "run_job", forbidden)
    monkeypatch.setattr(flows.qa, "verify_question", forbidden)
    again = generate_qa(domains=["cs"], n_seeds=3, modes=["candidates"], settings=settings)
    assert again["attempts"] == 0 and again["llm_calls"] == 0
    assert verify_paths(domains=["cs"], settings=settings)["questions"] == 0
    assert distill_trajectories(domains=["cs"], kinds=["cot"], settings=settings)["made"] == 0
    assert fake_llm.calls() == calls
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        # the rerun still records the seeds it stands on, as its first run did
        seeds = wh.query("SELECT run_id, node FROM seeds ORDER BY run_id, sample_rank")
    by_run: dict[str, list[str]] = {}
    for s in seeds:
        by_run.setdefault(s["run_id"], []).append(s["node"])
    assert by_run == {first["run_id"]: by_run[first["run_id"]], again["run_id"]: by_run[first["run_id"]]}


def test_different_sampling_parameters_do_not_reuse_earlier_seeds(askable_cs, settings, fake_llm):
    from flows.qa import generate_qa

    fake_llm.add(schema_name="qa_pick_path", reply=good_pick)
    fake_llm.add(schema_name="qa_judgement", reply={"valid": True, "reason": "ok"})
    assert generate_qa(domains=["cs"], n_seeds=2, modes=["candidates"], settings=settings)["accepted"] == 2
    more = generate_qa(domains=["cs"], n_seeds=3, modes=["candidates"], settings=settings)
    assert more["attempts"] >= 1  # the third seed is new work, not "nothing to do"


def test_a_run_that_samples_fewer_seeds_than_asked_says_why(cs_graph, settings, fake_llm):
    """The demo cs graph has fewer seeds where a path or a program starts than the 80 asked: the run says how many
    it sampled and why the others were passed over."""
    from flows.qa import generate_qa

    out = generate_qa(domains=["cs"], n_seeds=80, modes=["candidates"], writer="template", use_judge=False,
                      meaning_check="off", settings=settings)
    notes = [n for n in out["seed_notes"] if n.startswith("sampled ")]
    assert len(notes) == 1, out["seed_notes"]
    sampled = int(notes[0].split()[1])
    assert 0 < sampled < 80 and f"sampled {sampled} of the 80 seeds asked in domain cs" in notes[0]
    assert "start a path or a program; the others, e.g.: " in notes[0] and "hop" in notes[0]


def test_the_sampled_domains_of_the_config_reach_the_generation(tmp_path):
    """``[quality] sampled`` in a config file: ``generate-qa`` resolves it into the jobs' configuration, where the
    program search reads it per domain (``tasks.qa.programs.build_program``'s ``whole``)."""
    from flows.qa import resolve_generation

    config = tmp_path / "hopforge.toml"
    config.write_text('[quality]\nsampled = ["brands"]\n', encoding="utf-8")
    settings = load_settings(config, data_dir=tmp_path)
    assert settings.quality.sampled == ["brands"]
    gen = resolve_generation(settings, domains=None, n_seeds=4, hop_mix=None, modes=None, max_attempts=1,
                             use_judge=False, min_ball=None, max_ball=None, batch_size=8, dedup_threshold=0.8,
                             split_proportions=None, constrain_question=None, candidates=2, writer="template",
                             meaning_check="off")
    assert gen.cfg.sampled == frozenset({"brands"})
