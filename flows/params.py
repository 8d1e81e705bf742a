"""The parameters of each flow a command runs, declared once: one typed model a flow.

A model's fields are its flow's parameters (same names, same defaults: ``tests/test_params.py`` compares them with
the flow's signature, which Prefect turns into the deployment's run form). Each field carries its type, default,
description and the checks of its value (ranges, choices, domain names, bounds checked together). Three readers use
the same model:

- the flow checks its call with it first (``Model.check_call(locals())``), so a deployment run, ``prefect
  deployment run -p`` and a Python call refuse a bad value with one ``InputError``;
- the command line builds its options from it (``flows.cli_options.model_command``): names, help, defaults and
  choices come from the fields, and the values given are checked by the same model, so the command refuses the
  same bad value with the same line (exit status 2) before Prefect starts;
- the command hands the checked model to its flow (``flow_kwargs``).

How a field appears on the command line is its ``Cli`` (in the field's ``Annotated`` metadata): the option's
flags when they are not ``--`` and the field name with dashes (``n_seeds`` is ``--seeds``), a field the command
line does not offer (``hidden``), a positional argument, or another form of the value (``--short-share`` 0.5 is
``hop_mix`` {"1-2": 0.5, "3+": 0.5}). Problems name the parameter as a deployment passes it and, where the command
line offers it, its flag: ``n_seeds (--seeds) must be at least 1, got 0``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from flows.checks import HOP_CLASSES, SPLIT_NAMES, check_ball_bounds, check_domain_names, shares
from schemas.config import Role
from schemas.errors import InputError
from schemas.evaluation import Mode, TrainedAs
from schemas.export import EXPORT_CONFIGS, ExportConfig
from schemas.qa import GenMode, Split
from schemas.trajectories import TrajectoryKind

SourceKind = Literal["auto", "jsonl", "folder", "hf"]
Label = Literal["trivial", "easy", "medium", "hard", "unsolved"]
SolverMode = Literal["tools", "no_tools"]
QAMode = Literal["candidates", "free"]


@dataclass(frozen=True)
class Cli:
    """How a flow parameter is given on the command line (a field's ``Annotated`` metadata).

    ``flags``: the option's names (default ``--`` and the field name with dashes; a bool then also gets ``--no-``);
    ``hidden``: not on the command line (the flow's default applies); ``argument``: a positional argument;
    ``as_type``, ``default`` and ``to_flow``: the command line takes another form of the value, of this type and
    default, and ``to_flow`` turns it into the parameter; ``help``: the option's help, where it is not the field's
    description (a value in another form); ``command_only``: not a flow parameter but something the command
    applies itself (a configuration override)."""

    flags: tuple[str, ...] = ()
    hidden: bool = False
    argument: bool = False
    as_type: Any = None
    default: Any = None
    to_flow: Callable[[Any], Any] | None = None
    help: str | None = None
    command_only: bool = False


def cli_of(model: type[BaseModel], name: str) -> Cli:
    """The ``Cli`` of a field (a plain one when the field declares none)."""
    return next((m for m in model.model_fields[name].metadata if isinstance(m, Cli)), Cli())


def option_names(model: type[BaseModel], name: str) -> tuple[str, ...]:
    """A field's option as typer declares it: its ``Cli.flags``, else ``--`` and its name with dashes (a bool
    ``--x/--no-x``)."""
    cli = cli_of(model, name)
    if cli.flags:
        return cli.flags
    dash = name.replace("_", "-")
    return (f"--{dash}/--no-{dash}",) if (cli.as_type or model.model_fields[name].annotation) is bool else (f"--{dash}",)


def flags_of(model: type[BaseModel], name: str) -> tuple[str, ...]:
    """The command-line flags of a field, first the long one; () for a hidden field or an argument."""
    cli = cli_of(model, name)
    if cli.hidden or cli.argument:
        return ()
    return tuple(f for flag in option_names(model, name) for f in flag.split("/"))


def choices_of(annotation: Any) -> tuple[Any, ...]:
    """The values a ``Literal`` allows, through ``Optional``, lists and tuples; () for an open type."""
    if get_origin(annotation) is Literal:
        return get_args(annotation)
    return next((found for arg in get_args(annotation) if (found := choices_of(arg))), ())


def _either(choices: tuple[Any, ...]) -> str:
    words = [str(c) for c in choices]
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


def _label(model: type[BaseModel], name: str) -> str:
    """A parameter as problems name it: ``n_seeds (--seeds)``, or ``n_seeds`` where the command line lacks it."""
    flags = flags_of(model, name)
    return f"{name} ({flags[0]})" if flags else name


def _problem(model: type[BaseModel], err: Mapping[str, Any]) -> str:
    """One pydantic error as a line a person can act on."""
    ctx = err.get("ctx") or {}
    if isinstance(ctx.get("error"), InputError):  # a check of the model's own, worded already
        return str(ctx["error"])
    loc = err.get("loc") or ()
    name = str(loc[0]) if loc else ""
    what = _label(model, name) if name in model.model_fields else (name or model.__name__)
    got = err.get("input")
    kind = err.get("type", "")
    if kind == "greater_than_equal":
        return f"{what} must be at least {ctx['ge']:g}, got {got!r}"
    if kind == "greater_than":
        return f"{what} must be above {ctx['gt']:g}, got {got!r}"
    if kind == "less_than_equal":
        return f"{what} must be at most {ctx['le']:g}, got {got!r}"
    if kind == "literal_error":
        choices = choices_of(model.model_fields[name].annotation) if name in model.model_fields else ()
        return f"{what} must be {_either(choices) if choices else ctx['expected']}, got {got!r}"
    if kind == "too_short":
        return f"{what} needs at least {ctx['min_length']} value(s), got {got!r}"
    if kind == "extra_forbidden":
        return f"{model.__name__} has no parameter {name!r}"
    return f"{what}: {err.get('msg')} (given {got!r})"


class FlowParams(BaseModel):
    """The parameters of one flow (see the module docstring). ``flow`` names the flow function as
    ``module:function``."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    flow: ClassVar[str]

    @classmethod
    def check(cls, values: Mapping[str, Any]) -> "FlowParams":
        """The checked parameters; a bad value is an ``InputError`` naming the parameter (and its flag)."""
        try:
            return cls.model_validate(dict(values))
        except ValidationError as exc:
            first: dict[Any, Any] = {}  # one problem a parameter (a list's bad item, not also its length)
            for e in exc.errors():
                first.setdefault(e["loc"][0] if e.get("loc") else None, e)
            own = [(e.get("ctx") or {}).get("error") for e in first.values()]
            if len(own) == 1 and isinstance(own[0], InputError):
                raise own[0] from None  # a check's own error, its kind kept (an ExportError stays one)
            problems = list(dict.fromkeys(_problem(cls, e) for e in first.values()))
            raise InputError("; ".join(problems)) from None

    @classmethod
    def check_call(cls, call: Mapping[str, Any]) -> "FlowParams":
        """Check a flow's call (its ``locals()`` as it starts): the model's fields of it, the rest (``settings``)
        left out."""
        return cls.check({k: v for k, v in call.items() if k in cls.model_fields})

    def flow_kwargs(self) -> dict[str, Any]:
        """The flow's keyword arguments: every field but those the command applies itself."""
        return {k: getattr(self, k) for k in type(self).model_fields if not cli_of(type(self), k).command_only}


def _domains(value: Any) -> Any:
    check_domain_names(value)
    return value


Domains = Annotated[list[str] | None, Field(description="Domain(s); default: all known."), Cli(flags=("--domain", "-d"))]
BatchSize = Annotated[int | None, Field(ge=1, description="Items per batch task; default: the endpoint's "
                                                            "max_concurrency."), Cli(hidden=True)]


def _short_share(share: float) -> dict[str, float]:
    return {"1-2": share, "3+": 1 - share}


class GenerateQA(FlowParams):
    """``generate-qa`` (``hopforge qa generate``)."""

    flow = "flows.qa:generate_qa"

    domains: Domains = None
    n_seeds: Annotated[int, Field(ge=1, description="Seeds per domain."), Cli(flags=("--seeds",))] = 20
    hop_mix: Annotated[dict[str, float] | None, Field(description="Shares of the hop classes 1-2 and 3+."),
                       Cli(flags=("--short-share",), as_type=float, default=0.5, to_flow=_short_share,
                           help="Share of 1-2 hop questions (the rest are 3+).")] = None
    modes: Annotated[list[GenMode] | None, Field(description="candidates | free (repeat for both)."),
                     Cli(flags=("--mode", "-m"))] = None
    max_attempts: Annotated[int, Field(ge=1, description="Attempts per seed (first + retries with feedback)."),
                            Cli(flags=("--attempts",))] = 3
    use_judge: Annotated[bool, Field(description="Ask the verifier role to judge each question."),
                         Cli(flags=("--judge/--no-judge",))] = True
    min_ball: Annotated[int | None, Field(
        description="Fewest nodes in a seed's depth-3 neighbourhood, centre included (default: seeds.min_ball, 20); "
                    "lower it for a small graph.")] = None
    max_ball: Annotated[int | None, Field(
        description="Most nodes in a seed's depth-3 neighbourhood, centre included (default: seeds.max_ball, 400); "
                    "raise it for a dense graph.")] = None
    batch_size: Annotated[int, Field(ge=1, description="Jobs per batch task."), Cli(hidden=True)] = 64
    dedup_threshold: Annotated[float, Field(gt=0, le=1, description="Near-duplicate similarity."),
                               Cli(hidden=True)] = 0.8
    paraphrase_threshold: Annotated[float | None, Field(description="Paraphrase similarity."), Cli(hidden=True)] = 0.92
    split_proportions: Annotated[dict[str, float] | None, Field(description="Shares of train, validation, test."),
                                 Cli(hidden=True)] = None
    constrain_question: Annotated[bool | None, Field(description="A schema pattern on LLM questions."),
                                  Cli(hidden=True)] = None
    candidates: Annotated[int, Field(ge=1, description="Candidate answers offered."), Cli(hidden=True)] = 8
    writer: Annotated[Literal["llm", "template"] | None, Field(description="Who writes the questions."),
                      Cli(hidden=True)] = None
    meaning_check: Annotated[Literal["auto", "on", "off"] | None, Field(
        description="auto | on | off: before the judge, the verifier answers each question from its path's facts "
                    "alone; another answer rejects it. auto (the config's default): on unless the verifier is the "
                    "embedded model.")] = None

    _check_domains = field_validator("domains")(_domains)

    @field_validator("hop_mix")
    @classmethod
    def _hop_mix(cls, value: Any) -> Any:
        if value is not None:
            shares(value, HOP_CLASSES, "hop_mix", "--short-share sets 1-2 and 3+ = 1 - it")
        return value

    @field_validator("split_proportions")
    @classmethod
    def _splits(cls, value: Any) -> Any:
        if value is not None:
            shares(value, SPLIT_NAMES, "split_proportions", "")
        return value

    @model_validator(mode="after")
    def _balls(self) -> "GenerateQA":
        check_ball_bounds(self.min_ball, self.max_ball)
        return self


class VerifyPaths(FlowParams):
    """``verify-paths`` (``hopforge qa paths``)."""

    flow = "flows.qa:verify_paths"

    domains: Domains = None
    max_paths: Annotated[int, Field(ge=1, description="Candidate paths searched per question.")] = 20
    time_budget_s: Annotated[float, Field(gt=0, allow_inf_nan=False, description="Seconds of path search per "
                                                                                  "question."),
                             Cli(flags=("--time-budget",))] = 2.0
    paths_per_call: Annotated[int, Field(ge=1, description="Paths the verifier reads per call."),
                              Cli(hidden=True)] = 5
    batch_size: BatchSize = None

    _check_domains = field_validator("domains")(_domains)


class DistillTrajectories(FlowParams):
    """``distill-trajectories`` (``hopforge traj distill``)."""

    flow = "flows.distill:distill_trajectories"

    domains: Domains = None
    kinds: Annotated[tuple[TrajectoryKind, ...], Field(min_length=1, description="template | rollouts | cot (repeat)."),
                     Cli(flags=("--kind", "-k"))] = ("template", "rollouts", "cot")
    n_rollouts: Annotated[int, Field(ge=0, description="Rollout samples per question."),
                          Cli(flags=("--rollouts",))] = 2
    split: Annotated[Split | None, Field(description="Only questions of this split.")] = None
    qa_ids: Annotated[list[str] | None, Field(description="Only these questions."), Cli(hidden=True)] = None
    batch_size: BatchSize = None
    min_path_coverage: Annotated[float, Field(ge=0, le=1, description="Share of the gold path a trajectory's tool "
                                                                      "calls must cover.")] = 0.5
    max_distractors: Annotated[int, Field(ge=0, description="Distractor facts at most."), Cli(hidden=True)] = 40
    rollout_temperature: Annotated[float, Field(ge=0, description="Rollout sampling temperature."),
                                   Cli(hidden=True)] = 0.8
    rollout_style: Annotated[str, Field(description="text | native tool calls."), Cli(hidden=True)] = "text"
    max_rounds: Annotated[int, Field(ge=1, description="Tool rounds at most."), Cli(hidden=True)] = 7
    max_tokens_per_round: Annotated[int, Field(ge=1, description="Reply tokens a round."), Cli(hidden=True)] = 3000
    cot_max_tokens: Annotated[int, Field(ge=1, description="Reply tokens of a long CoT."), Cli(hidden=True)] = 4096
    thought_writer: Annotated[str | None, Field(description="Who writes the thoughts."), Cli(hidden=True)] = None

    _check_domains = field_validator("domains")(_domains)


def _split_or_all(split: str) -> str | None:
    return None if split == "all" else split


class EvaluatePolicy(FlowParams):
    """``evaluate-policy`` (``hopforge eval run``)."""

    flow = "flows.evaluate:evaluate_policy"

    domains: Domains = None
    split: Annotated[Split | None, Field(description="The split scored; None: every split."),
                     Cli(as_type=str, default="test", to_flow=_split_or_all,
                         help="train | validation | test | all")] = "test"
    modes: Annotated[tuple[Mode, ...], Field(min_length=1, description="tools | no_tools | gold_context (repeat)"),
                     Cli(flags=("--mode", "-m"))] = ("tools", "no_tools")
    limit: Annotated[int | None, Field(ge=1, description="At most this many questions.")] = None
    use_judge: Annotated[bool, Field(description="Ask the judge role when exact match fails."),
                         Cli(flags=("--judge/--no-judge",))] = False
    batch_size: BatchSize = None
    max_rounds: Annotated[int, Field(ge=1, description="Tool rounds at most."), Cli(hidden=True)] = 7
    max_tokens_per_round: Annotated[int, Field(ge=1, description="Reply tokens a round."), Cli(hidden=True)] = 3000
    reuse: Annotated[bool, Field(description="Take over items an earlier run finished."), Cli(hidden=True)] = True
    trained_as: Annotated[TrainedAs | None, Field(
        description="think | no_think: the policy is a checkpoint trained on those export rows; evaluate it in that "
                    "context.")] = None
    serving: Annotated[dict[str, Any] | None, Field(description="The serving server's record."),
                       Cli(hidden=True)] = None
    ikg_levels: Annotated[list[float] | None, Field(
        description="Also score each question in its IKG view at this level, e.g. 0.4 for IKG-40% (repeat); "
                    "default: [ikg] levels."), Cli(flags=("--ikg-level",))] = None

    _check_domains = field_validator("domains")(_domains)


class ExportDatasets(FlowParams):
    """``export-datasets`` (``hopforge export``)."""

    flow = "flows.export:export_datasets"

    version: Annotated[str | None, Field(description="Version name; default: a hash of the inputs.")] = None
    include: Annotated[tuple[ExportConfig, ...], Field(min_length=1, description="qa | sft | sft_nothink | rl | "
                                                                                 "messages"),
                       Cli(flags=("--include", "-i"))] = EXPORT_CONFIGS
    repo_id: Annotated[str | None, Field(
        description="Also publish to this Hugging Face dataset repo, as refresh does: one commit on main and a tag "
                    "named after the version.")] = None
    token_env: Annotated[str, Field(description="The environment variable holding the Hub token.")] = "HF_TOKEN"
    private: Annotated[bool, Field(description="A new Hub repository is private."), Cli(hidden=True)] = True
    ikg_texts: Annotated[Path | None, Field(
        description="A text collection (folder, jsonl or dataset on disk) the IKG variants' text search reads "
                    "beside each domain's corpus; default: the \\[ikg] texts setting."), Cli(command_only=True)] = None

    @field_validator("version")
    @classmethod
    def _version(cls, value: Any) -> Any:
        from tasks.export.datasets import check_version  # the export code (heavy) only when a version is given

        return value if value is None else check_version(value)


class IngestCorpus(FlowParams):
    """``ingest-corpus`` (``hopforge ingest``)."""

    flow = "flows.graphs:ingest_corpus"

    source: Annotated[str, Field(description="Corpus: UltraDomain jsonl, a folder, or a Hugging Face dataset id."),
                      Cli(argument=True)]
    source_kind: Annotated[SourceKind, Field(description="auto | jsonl | folder | hf"), Cli(flags=("--kind",))] = "auto"
    allow_new_domains: Annotated[bool, Field(description="Accept domains outside the 20 UltraDomain names.")] = False
    chunk_token_size: Annotated[int, Field(description="Tokens a chunk."), Cli(flags=("--chunk-tokens",))] = 1200
    chunk_overlap_token_size: Annotated[int, Field(description="Tokens two chunks share."),
                                        Cli(flags=("--chunk-overlap",))] = 100


class BuildGraphs(FlowParams):
    """``build-graphs`` (``hopforge graph build``)."""

    flow = "flows.graphs:build_graphs"

    domains: Domains = None
    source: Annotated[str | None, Field(description="Ingest this corpus first.")] = None
    source_kind: Annotated[SourceKind, Field(description="auto | jsonl | folder | hf"), Cli(flags=("--kind",))] = "auto"
    chunk_token_size: Annotated[int, Field(description="Tokens a chunk."), Cli(flags=("--chunk-tokens",))] = 1200
    chunk_overlap_token_size: Annotated[int, Field(description="Tokens two chunks share."),
                                        Cli(flags=("--chunk-overlap",))] = 100
    allow_new_domains: Annotated[bool, Field(description="Accept domains outside the 20 UltraDomain names.")] = False
    max_parallel_insert: Annotated[int, Field(ge=1, description="Documents LightRAG inserts at once."),
                                   Cli(hidden=True)] = 2
    llm_max_async: Annotated[int, Field(ge=1, description="LightRAG's concurrent LLM calls."), Cli(hidden=True)] = 4
    gleaning: Annotated[int | None, Field(ge=0, description="LightRAG's extra extraction rounds per chunk."),
                        Cli(hidden=True)] = None

    _check_domains = field_validator("domains")(_domains)


class Refresh(FlowParams):
    """``refresh`` (``hopforge refresh``)."""

    flow = "flows.refresh:refresh"

    sources: Annotated[list[str] | None, Field(description="Corpus source (repeat); default: the previous refresh's."),
                       Cli(flags=("--source", "-s"))] = None
    domains: Domains = None
    allow_new_domains: Annotated[bool, Field(description="Accept domains outside the 20 UltraDomain names."),
                                 Cli(hidden=True)] = False
    n_seeds: Annotated[int, Field(ge=0, description="Seeds per changed domain.")] = 20
    seed_quota: Annotated[int, Field(ge=0, description="Seeds per changed domain at least."), Cli(hidden=True)] = 0
    modes: Annotated[tuple[QAMode, ...], Field(description="Question modes."), Cli(hidden=True)] = ("candidates",)
    max_attempts: Annotated[int, Field(ge=1, description="Attempts per seed."), Cli(hidden=True)] = 3
    min_ball: Annotated[int | None, Field(description="Fewest nodes in a seed's ball."), Cli(hidden=True)] = None
    max_ball: Annotated[int | None, Field(description="Most nodes in a seed's ball."), Cli(hidden=True)] = None
    n_rollouts: Annotated[int, Field(ge=0, description="Rollout samples per question."), Cli(hidden=True)] = 2
    measure_difficulty: Annotated[bool, Field(description="Measure solver pass@k difficulty of new questions."),
                                  Cli(flags=("--difficulty/--no-difficulty",))] = True
    solver_k: Annotated[int, Field(ge=1, description="Solver attempts per question."), Cli(hidden=True)] = 4
    solver_modes: Annotated[tuple[SolverMode, ...], Field(description="Solver modes."),
                            Cli(hidden=True)] = ("tools", "no_tools")
    solver_temperature: Annotated[float, Field(ge=0, description="Solver sampling temperature."),
                                  Cli(hidden=True)] = 1.0
    solver_role: Annotated[Role, Field(description="The role that solves."), Cli(hidden=True)] = "policy"
    drop_labels: Annotated[tuple[Label, ...], Field(description="Difficulty labels left out of the export."),
                           Cli(hidden=True)] = ("trivial",)
    include: Annotated[tuple[ExportConfig, ...], Field(min_length=1, description="Export configs."),
                       Cli(hidden=True)] = EXPORT_CONFIGS
    repo_id: Annotated[str | None, Field(description="Publish the new version to this Hugging Face dataset repo.")] = None
    token_env: Annotated[str, Field(description="The environment variable holding the Hub token.")] = "HF_TOKEN"
    private: Annotated[bool, Field(description="A new Hub repository is private."), Cli(hidden=True)] = True
    max_rounds: Annotated[int, Field(ge=1, description="Solver tool rounds at most."), Cli(hidden=True)] = 7
    max_tokens_per_round: Annotated[int, Field(ge=1, description="Solver reply tokens a round."),
                                    Cli(hidden=True)] = 3000

    _check_domains = field_validator("domains")(_domains)

    @model_validator(mode="after")
    def _balls(self) -> "Refresh":
        check_ball_bounds(self.min_ball, self.max_ball)
        return self


#: Every model, for the tests that hold them to their flows.
MODELS: tuple[type[FlowParams], ...] = (GenerateQA, VerifyPaths, DistillTrajectories, EvaluatePolicy, ExportDatasets,
                                        IngestCorpus, BuildGraphs, Refresh)

__all__ = ["MODELS", "BuildGraphs", "Cli", "DistillTrajectories", "EvaluatePolicy", "ExportDatasets", "FlowParams",
           "GenerateQA", "IngestCorpus", "Refresh", "VerifyPaths", "choices_of", "cli_of", "flags_of", "option_names"]
