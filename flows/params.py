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

A flow whose parameter is a trainer's option model (``train-sft``'s ``options``, ``train-rl``'s ``verl`` / ``trl``)
has it checked by that model's own check (``SFTOptions.from_values``, ``options_from``): one ``TrainingError``
naming each bad option, whichever way the options came. The command line offers the options a person sets most as
options of their own (``--think-weight``, ``--nnodes``; ``Cli.part``) and the rest as ``--set KEY=VALUE``; the model
gathers them into the parameter before the check.

Two commands here are not one flow: ``Demo`` (its options, defaults and checks, and the factory's call they make:
``Demo.factory_kwargs``) and ``ExportProfiles`` (the parameters of ``flows.profiles.export_profiles``, which runs the
``profile-relations`` flow when asked). A field only the command line has (``Cli.command_only``) is something the
command applies itself: ``ImportGraphs``' one file and its domain, which make the flow's ``files``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from flows.checks import (HOP_CLASSES, SPLIT_NAMES, GraphKind, check_ball_bounds, check_domain_names,
                          check_graph_files, check_graph_kind, shares)
from schemas.config import Role
from schemas.errors import InputError
from schemas.evaluation import Mode, TrainedAs
from schemas.export import EXPORT_CONFIGS, ExportConfig
from schemas.qa import GenMode, Split
from schemas.trajectories import TrajectoryKind
from training.rl_trl import TRLOptions
from training.rl_verl import VerlOptions
from training.sft import SFTOptions

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
    applies itself (a configuration override).

    ``part``: not a flow parameter but one option of the trainer options the model gathers into a parameter
    (``Params.parts_into``): its key there, dotted into a section (``"cluster.nnodes"``), ``""`` for a mapping of
    options merged whole (``--set``), or a mapping from the parameter to the key where the key differs by trainer (a
    parameter it lacks refuses the option: ``Params.part_refusals``). ``None`` (or what ``part_value`` makes
    ``None``) is "not given": the trainer's default applies. ``required``: the command line requires the option
    (the trainer's model requires the key)."""

    flags: tuple[str, ...] = ()
    hidden: bool = False
    argument: bool = False
    as_type: Any = None
    default: Any = None
    to_flow: Callable[[Any], Any] | None = None
    help: str | None = None
    command_only: bool = False
    part: str | Mapping[str, str] | None = None
    part_value: Callable[[Any], Any] | None = None
    required: bool = False


def cli_of(model: type[BaseModel], name: str) -> Cli:
    """The ``Cli`` of a field (a plain one when the field declares none)."""
    return next((m for m in model.model_fields[name].metadata if isinstance(m, Cli)), Cli())


def is_parameter(model: type[BaseModel], name: str) -> bool:
    """Whether a field is a parameter of the flow (not a command-only setting, not a part of a trainer's options)."""
    cli = cli_of(model, name)
    return not cli.command_only and cli.part is None


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
    if kind == "missing":
        return f"{what} is required"
    if kind == "extra_forbidden":
        return f"{model.__name__} has no parameter {name!r}"
    return f"{what}: {err.get('msg')} (given {got!r})"


def option_sets(pairs: list[str] | None) -> dict[str, Any]:
    """``--set KEY=VALUE`` pairs as a dict; values read as YAML (numbers, booleans, lists), dotted keys nest."""
    import yaml

    out: dict[str, Any] = {}
    for pair in pairs or []:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise InputError(f"--set {pair!r}: expected KEY=VALUE")
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError:
            value = raw
        node = out
        *parents, leaf = key.strip().split(".")
        for part in parents:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise InputError(f"--set {pair!r}: {part} is already a value")
        node[leaf] = value
    return out


def _put(options: dict[str, Any], key: str, value: Any) -> None:
    """``value`` at the dotted ``key`` of ``options``, over what ``--set`` put there (a section stays a mapping)."""
    *sections, leaf = key.split(".")
    node = options
    for i, section in enumerate(sections):
        inner = node.get(section)
        if inner is None:
            inner = {}
        if not isinstance(inner, Mapping):
            dotted = ".".join(sections[: i + 1])
            raise InputError(f"--set {dotted}=... must be a mapping (use --set {dotted}.{leaf}={value})")
        node[section] = dict(inner)
        node = node[section]
    node[leaf] = value


class Params(BaseModel):
    """The parameters of one command, declared and checked in one place (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    #: Per parameter the parts go into, the line refusing a part that parameter does not take (``Cli.part``).
    part_refusals: ClassVar[dict[str, str]] = {}

    @classmethod
    def check(cls, values: Mapping[str, Any]) -> Any:
        """The checked parameters; a bad value is an ``InputError`` naming the parameter (and its flag), a bad
        trainer option the trainer model's own ``TrainingError``."""
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
    def parts_into(cls, values: Mapping[str, Any]) -> str | None:
        """The parameter the parts (``Cli.part``) go into, given the call's values; ``None``: none can (the
        parameter that chooses it is wrong, and says so itself)."""
        return "options"

    @classmethod
    def extra_parts(cls, values: Mapping[str, Any], into: str) -> dict[str, Any]:
        """Keys of the parts' parameter that come from another parameter of the call (none by default)."""
        return {}

    @model_validator(mode="before")
    @classmethod
    def _gather_parts(cls, values: Any) -> Any:
        """The parts given (``Cli.part``) gathered into their parameter: ``--set`` first, the options of their own
        over it; what the parameter held already (a mapping or a model) under both."""
        if not isinstance(values, Mapping):
            return values
        given = {}
        for name in cls.model_fields:
            cli = cli_of(cls, name)
            value = values.get(name)
            if cli.part is not None and value is not None:
                value = cli.part_value(value) if cli.part_value is not None else value
                if value is not None:
                    given[name] = value
        into = cls.parts_into(values) if given else None
        extra = cls.extra_parts(values, into) if into is not None else {}
        if into is None or not (given or extra):
            return values
        paths = {n: cli_of(cls, n).part for n in given}
        paths = {n: p if isinstance(p, str) else p.get(into) for n, p in paths.items()}
        refused = [flags_of(cls, n)[0] for n, p in paths.items() if p is None]
        if refused:
            raise InputError(cls.part_refusals.get(into) or f"{', '.join(refused)}: not an option of {into}")
        held = values.get(into)
        options = (held.model_dump(exclude_unset=True) if isinstance(held, BaseModel) else
                   dict(held) if isinstance(held, Mapping) else {})
        for name in sorted(given, key=lambda n: paths[n] != ""):  # --set first: the options of their own win
            if paths[name] == "":
                options.update(given[name])
            else:
                _put(options, paths[name], given[name])
        for key, value in extra.items():
            _put(options, key, value)
        return {**values, into: options}


class FlowParams(Params):
    """The parameters of one flow (see the module docstring). ``flow`` names the flow function as
    ``module:function``."""

    flow: ClassVar[str]

    @classmethod
    def check_call(cls, call: Mapping[str, Any]) -> "FlowParams":
        """Check a flow's call (its ``locals()`` as it starts): the model's fields of it, the rest (``settings``)
        left out."""
        return cls.check({k: v for k, v in call.items() if k in cls.model_fields})

    def flow_kwargs(self) -> dict[str, Any]:
        """The flow's keyword arguments: every field but those the command applies itself and the parts of
        trainer options (gathered into their parameter)."""
        return {k: getattr(self, k) for k in type(self).model_fields if is_parameter(type(self), k)}


def _domains(value: Any) -> Any:
    check_domain_names(value)
    return value


#: The domains option and the new-domains switch, as every verb offers them (the hand-written verbs too).
DOMAINS_HELP = "Domain(s); default: all known."
DOMAIN_FLAGS = ("--domain", "-d")
NEW_DOMAINS_HELP = "Accept domains outside the 20 UltraDomain names."
Domains = Annotated[list[str] | None, Field(description=DOMAINS_HELP), Cli(flags=DOMAIN_FLAGS)]
BatchSize = Annotated[int | None, Field(ge=1, description="Items per batch task; default: the endpoint's "
                                                            "max_concurrency."), Cli(hidden=True)]


#: The seed ball bounds as generate-qa and the demo offer them.
MinBall = Annotated[int | None, Field(
    description="Fewest nodes in a seed's depth-3 neighbourhood, centre included (default: seeds.min_ball, 20); "
                "lower it for a small graph.")]
MaxBall = Annotated[int | None, Field(
    description="Most nodes in a seed's depth-3 neighbourhood, centre included (default: seeds.max_ball, 400); "
                "raise it for a dense graph.")]


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
    min_ball: MinBall = None
    max_ball: MaxBall = None
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

    @field_validator("ikg_levels")
    @classmethod
    def _ikg_levels(cls, value: Any) -> Any:
        """Each level a share in (0, 1) (``tasks.env.ikg.check_levels``: its ``IKGError``); ``[]``: none asked."""
        from tasks.env.ikg import check_levels  # the IKG code only when levels are given

        if value:
            check_levels(value)
        return value


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
    allow_new_domains: Annotated[bool, Field(description=NEW_DOMAINS_HELP)] = False
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
    allow_new_domains: Annotated[bool, Field(description=NEW_DOMAINS_HELP)] = False
    max_parallel_insert: Annotated[int, Field(ge=1, description="Documents LightRAG inserts at once."),
                                   Cli(hidden=True)] = 2
    llm_max_async: Annotated[int, Field(ge=1, description="LightRAG's concurrent LLM calls."), Cli(hidden=True)] = 4
    gleaning: Annotated[int | None, Field(ge=0, description="LightRAG's extra extraction rounds per chunk."),
                        Cli(hidden=True)] = None

    _check_domains = field_validator("domains")(_domains)


class ReportGraphs(FlowParams):
    """``report-graphs`` (``hopforge graph report``)."""

    flow = "flows.graphs:report_graphs"

    domains: Domains = None


class ImportGraphs(FlowParams):
    """``import-graphs`` (``hopforge graph import``). The command line imports one file (``path``) as one domain
    (``--domain``): ``files`` is ``{domain: path}``, checked (``flows.checks.check_graph_files``) with the command's
    ``--allow-new-domains``, the rule ``ingest`` applies. A Python caller or a deployment names its own domains: the
    flow checks its files where it reads them (``files: {}`` is a deployment's placeholder)."""

    flow = "flows.graphs:import_graphs"

    path: Annotated[Path | None, Cli(argument=True, required=True, command_only=True)] = None
    domain: Annotated[str | None, Cli(flags=("--domain", "-d"), required=True, command_only=True)] = None
    files: Annotated[dict[str, str], Field(description="The graph file of each domain imported."), Cli(hidden=True)]
    kind: Annotated[GraphKind | None, Field(description="graphml | lightrag | triples | rog (default: by file)"),
                    Cli(as_type=str)] = None
    allow_new_domains: Annotated[bool, Field(description=NEW_DOMAINS_HELP), Cli(command_only=True)] = False

    _check_kind = field_validator("kind", mode="before")(check_graph_kind)

    @model_validator(mode="before")
    @classmethod
    def _one_file(cls, values: Any) -> Any:
        """The command line's one file as ``files``."""
        if isinstance(values, Mapping) and values.get("path") is not None:
            return {**values, "files": {values.get("domain"): str(values["path"])}}
        return values

    @model_validator(mode="after")
    def _files(self) -> "ImportGraphs":
        if self.path is not None:  # the command line's file, before Prefect starts
            check_graph_files(self.files, self.kind, allow_new_domains=self.allow_new_domains)
        return self


def _a_file(value: str) -> str:
    if not Path(value).is_file():
        raise InputError(f"{value}: no such file")
    return value


class ImportProfiles(FlowParams):
    """``import-profiles`` (``hopforge graph profiles import``)."""

    flow = "flows.profiles:import_profiles"

    path: Annotated[str, Cli(argument=True, as_type=Path, to_flow=str)]

    _check_path = field_validator("path")(_a_file)


class ExportProfiles(Params):
    """``hopforge graph profiles export``: not a flow but ``flows.profiles.export_profiles`` (``function``), which
    runs the ``profile-relations`` flow first when ``profile`` asks; the fields are its parameters (the command
    line's default file too), ``call_kwargs`` its call."""

    function: ClassVar[str] = "flows.profiles:export_profiles"

    path: Annotated[Path, Field(description="The YAML file to write."),
                    Cli(flags=("--out", "-o"))] = Path("relation_profiles.yaml")
    domains: Domains = None
    profile: Annotated[bool, Field(description="First ask the profiler role (once per label) about the labels no "
                                               "other source profiles; needs a profiler endpoint other than the "
                                               "embedded model."), Cli(flags=("--profile",))] = False

    def call_kwargs(self) -> dict[str, Any]:
        """``export_profiles``'s keyword arguments (all but ``settings``)."""
        return {name: getattr(self, name) for name in type(self).model_fields}


class Refresh(FlowParams):
    """``refresh`` (``hopforge refresh``)."""

    flow = "flows.refresh:refresh"

    sources: Annotated[list[str] | None, Field(description="Corpus source (repeat); default: the previous refresh's."),
                       Cli(flags=("--source", "-s"))] = None
    domains: Domains = None
    allow_new_domains: Annotated[bool, Field(description=NEW_DOMAINS_HELP),
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


class Doctor(FlowParams):
    """``doctor`` (``hopforge doctor``)."""

    flow = "flows.doctor:doctor"

    embeddings: Annotated[bool, Field(description="Also check the embedding model.")] = True


class Smoke(FlowParams):
    """``smoke`` (``hopforge smoke``): the command line offers none of its parameters."""

    flow = "flows.smoke:smoke"

    texts: Annotated[list[str] | None, Field(description="The texts annotated; default: tasks.ops.smoke.SMOKE_TEXTS."),
                     Cli(hidden=True)] = None
    batch_size: Annotated[int, Field(ge=1, description="Texts per batch task."), Cli(hidden=True)] = 8


class Demo(Params):
    """``hopforge demo``: doctor, smoke, then the factory on the demo corpus. Its defaults are
    ``flows.factory.DEMO_PLAN``'s (``tests/test_params_commands.py`` holds them equal); ``factory_kwargs`` is the
    part of the factory's call they make (the command adds what depends on the configured endpoints)."""

    seeds: Annotated[int, Field(ge=1, description="Seeds per domain for candidates mode.")] = 10
    short_share: Annotated[float, Field(description="Share of 1-2 hop jobs (the rest are 3+); the demo graphs are "
                                                    "small, and few of their 3+ hop paths can be asked.")] = 0.8
    free_seeds: Annotated[int, Field(ge=1, description="Seeds per domain for free mode.")] = 1
    deep_questions: Annotated[int, Field(description="Questions that also get teacher rollouts and long CoT (0 "
                                                     "skips them).")] = 3
    eval_items: Annotated[int, Field(description="Test questions the evaluation scores, first by id (0: the whole "
                                                 "test split).")] = 4
    min_ball: MinBall = None
    max_ball: MaxBall = None

    @field_validator("short_share")
    @classmethod
    def _share(cls, value: float) -> float:
        if not 0 <= value <= 1:
            raise InputError(f"--short-share must be between 0 and 1, got {value}")
        return value

    @field_validator("deep_questions")
    @classmethod
    def _deep(cls, value: int) -> int:
        if value < 0:
            raise InputError(f"--deep-questions must be >= 0, got {value}")
        return value

    @field_validator("eval_items")
    @classmethod
    def _eval_items(cls, value: int) -> int:
        if value < 0:
            raise InputError(f"--eval-items must be >= 0 (0: the whole test split), got {value}")
        return value

    @model_validator(mode="after")
    def _balls(self) -> "Demo":
        check_ball_bounds(self.min_ball, self.max_ball)
        return self

    def factory_kwargs(self) -> dict[str, Any]:
        """The factory's parameters these values set (``flows.factory.factory``)."""
        return {"n_seeds": self.seeds, "free_seeds": self.free_seeds, "hop_mix": _short_share(self.short_share),
                "deep_questions": self.deep_questions, "eval_limit": self.eval_items or None,
                "min_ball": self.min_ball, "max_ball": self.max_ball}


# -- training: the trainer's option model is the parameter; the command line sets its common options one by one ---

Sets = Annotated[list[str] | None, Field(description="Trainer option KEY=VALUE (repeat); VALUE is read as YAML."),
                 Cli(flags=("--set", "-s"), part="", part_value=option_sets)]
ExportVersion = Annotated[str | None, Field(description="Export version (or directory); default: the newest."),
                          Cli(flags=("--export", "-e"))]
DryRun = Annotated[bool, Field(description="Write the configs and the command; launch nothing."),
                   Cli(flags=("--dry-run",))]
Check = Annotated[bool, Field(description="With --dry-run: the trainer's own parser must accept the config (needs "
                                          "its environment)."), Cli(flags=("--check",))]
Timeout = Annotated[float | None, Field(description="Kill the trainer after this many seconds."),
                    Cli(flags=("--timeout",))]
RunId = Annotated[str | None, Field(description="The run's id, the same on every node (names its run directory); "
                                                "default on several nodes: derived from the rendezvous, so the same "
                                                "command agrees.")]
Offline = Annotated[bool, Field(description="The trainer may not download the model from the hub (always so for a "
                                            "local model directory)."), Cli(flags=("--offline",))]
#: The cluster options (``training.cluster.ClusterOptions``: the ``cluster`` section of an SFT or TRL plan).
NODE_HELP = {"nnodes": "Nodes in the job (cluster.nnodes).",
             "node_rank": "This node's rank, 0 on the master (cluster.node_rank).",
             "nproc_per_node": "Processes on this node; default: its visible GPUs (cluster.nproc_per_node).",
             "master_addr": "Address of node 0 every node reaches (cluster.master_addr).",
             "master_port": "Rendezvous port on node 0 (cluster.master_port).",
             "deepspeed": "none | zero2 | zero3 (DeepSpeed ZeRO stage)."}


def _full(full: bool) -> str | None:
    return "full" if full else None


def _check_with_dry_run(check: bool, dry_run: bool) -> None:
    if check and not dry_run:
        raise InputError("check (--check) goes with dry_run (--dry-run): a real run is checked by the trainer itself")


def _timeout(value: float | None) -> float | None:
    from training.runs import check_timeout  # the flow's own check, so both ways in refuse with its line

    return check_timeout(value)


# The training flows' parameter ``check`` shares its name with ``Params.check``: the class keeps the method (what
# ``TrainSFT.check`` is), an instance the value (``p.check``). pydantic's warning about it is not for a user.
warnings.filterwarnings("ignore", message='Field name "check" in "Train(SFT|RL)" shadows', category=UserWarning)


class TrainSFT(FlowParams):
    """``train-sft`` (``hopforge train sft``). ``options`` is LLaMA-Factory's options (``training.sft.SFTOptions``),
    checked by ``SFTOptions.from_values``; the command line gathers them from ``--set`` and the options of their
    own."""

    flow = "flows.train:train_sft"

    options: Annotated[SFTOptions, Field(description="LLaMA-Factory SFT options (training.sft.SFTOptions)."),
                       Cli(hidden=True)]
    model: Annotated[str | None, Field(description="Base model directory (or hub id on the GPU side)."),
                     Cli(flags=("--model", "-m"), part="model", required=True)] = None
    export_version: ExportVersion = None
    dataset: Annotated[list[str] | None, Field(description="dataset_info.json entries; default: the export's think "
                                                           "SFT train split."), Cli(part="dataset")] = None
    full: Annotated[bool, Field(description="Full fine-tuning instead of LoRA."),
                    Cli(flags=("--full",), part="finetuning_type", part_value=_full)] = False
    think_weight: Annotated[float | None, Field(description="Loss weight of <think> spans (Omne-R1's best: 0.001)."),
                            Cli(part="think_weight")] = None
    max_steps: Annotated[int | None, Field(description="Stop after this many optimizer steps."),
                         Cli(part="max_steps")] = None
    nnodes: Annotated[int | None, Field(description=NODE_HELP["nnodes"]), Cli(part="cluster.nnodes")] = None
    node_rank: Annotated[int | None, Field(description=NODE_HELP["node_rank"]), Cli(part="cluster.node_rank")] = None
    nproc_per_node: Annotated[int | None, Field(description=NODE_HELP["nproc_per_node"]),
                              Cli(part="cluster.nproc_per_node")] = None
    master_addr: Annotated[str | None, Field(description=NODE_HELP["master_addr"]),
                           Cli(part="cluster.master_addr")] = None
    master_port: Annotated[int | None, Field(description=NODE_HELP["master_port"]),
                           Cli(part="cluster.master_port")] = None
    deepspeed: Annotated[str | None, Field(description=NODE_HELP["deepspeed"]), Cli(part="deepspeed")] = None
    run_id: RunId = None
    offline: Offline = False
    shared_dir: Annotated[str | None, Field(description="A directory every node mounts at this path: the run "
                                                        "directory goes there (default: the data dir, then shared by "
                                                        "the nodes).")] = None
    sets: Sets = None
    dry_run: DryRun = False
    check: Check = False
    timeout_s: Timeout = None

    @field_validator("options", mode="before")
    @classmethod
    def _options(cls, value: Any) -> Any:
        return SFTOptions.from_values(value) if isinstance(value, Mapping) else value

    _check_timeout = field_validator("timeout_s")(_timeout)

    @model_validator(mode="after")
    def _check_goes_with_dry_run(self) -> "TrainSFT":
        _check_with_dry_run(self.check, self.dry_run)
        return self


def _rl_options(cls: type[Any], value: Any) -> Any:
    from training.rl_common import options_from

    return options_from(cls, value) if isinstance(value, Mapping) else value


class TrainRL(FlowParams):
    """``train-rl`` (``hopforge train rl``). ``verl`` / ``trl`` are the trainer's options
    (``training.rl_verl.VerlOptions``, ``training.rl_trl.TRLOptions``), checked by ``training.rl_common.options_from``;
    the command line gathers those of ``trainer`` from ``--set`` and the options of their own (a cluster option
    where verl takes its own: ``--nnodes`` is verl's ``nnodes``, TRL's ``cluster.nnodes``)."""

    flow = "flows.train:train_rl"
    part_refusals: ClassVar[dict[str, str]] = {
        "verl": "--node-rank, --nproc-per-node, --master-addr, --master-port and --deepspeed are TRL options; verl "
                "takes --set nnodes=... --set n_gpus_per_node=...",
        "trl": "--ray-address is a verl option (TRL launches with accelerate)"}

    model: Annotated[str | None, Field(description="Base model (stage 1) or SFT checkpoint (stage 3)."),
                     Cli(flags=("--model", "-m"), part="model", required=True)] = None
    export_version: ExportVersion = None
    trainer: Annotated[Literal["verl", "trl"], Field(description="verl (GRPO/PPO, vLLM rollouts, KG tools) | trl "
                                                                 "(GRPO, light path)")] = "verl"
    verl: Annotated[VerlOptions | None, Field(description="verl's options (training.rl_verl.VerlOptions)."),
                    Cli(hidden=True)] = None
    trl: Annotated[TRLOptions | None, Field(description="TRL's options (training.rl_trl.TRLOptions)."),
                   Cli(hidden=True)] = None
    stage: Annotated[str | None, Field(description="base (Omne-R1 stage 1) | sft (stage 3)"), Cli(part="stage")] = None
    reward: Annotated[str | None, Field(description="Reward name (training.rewards.REWARDS)."),
                      Cli(part="reward")] = None
    tool_server: Annotated[str | None, Field(description="URL of a running `hopforge serve-tools`; default: start "
                                                         "one."), Cli(part="tool_server_url")] = None
    start_tool_server: Annotated[bool, Field(description="verl: serve the warehouse's tools for the rollouts (off "
                                                         "when tool_server_url names a running server)."),
                                 Cli(hidden=True)] = True
    tool_embedder: Annotated[Literal["configured", "hashing"], Field(description="The embedder of the tool server "
                                                                                 "the flow starts."),
                             Cli(hidden=True)] = "configured"
    tool_workers: Annotated[int, Field(ge=1, description="Processes of the tool server the flow starts.")] = 1
    nnodes: Annotated[int | None, Field(description=NODE_HELP["nnodes"]),
                      Cli(part={"verl": "nnodes", "trl": "cluster.nnodes"})] = None
    node_rank: Annotated[int | None, Field(description=NODE_HELP["node_rank"]),
                         Cli(part={"trl": "cluster.node_rank"})] = None
    nproc_per_node: Annotated[int | None, Field(description=NODE_HELP["nproc_per_node"]),
                              Cli(part={"trl": "cluster.nproc_per_node"})] = None
    master_addr: Annotated[str | None, Field(description=NODE_HELP["master_addr"]),
                           Cli(part={"trl": "cluster.master_addr"})] = None
    master_port: Annotated[int | None, Field(description=NODE_HELP["master_port"]),
                           Cli(part={"trl": "cluster.master_port"})] = None
    deepspeed: Annotated[str | None, Field(description=NODE_HELP["deepspeed"]), Cli(part={"trl": "deepspeed"})] = None
    ray_address: Annotated[str | None, Field(description="verl: host:port of a running Ray cluster's head to join "
                                                         "(default: a local Ray)."),
                           Cli(part={"verl": "ray_address"})] = None
    shared_dir: Annotated[str | None, Field(description="A directory every node mounts at this path: verl's "
                                                        "checkpoints go there (needed with --ray-address or nnodes > "
                                                        "1); TRL's run directory.")] = None
    run_id: RunId = None
    offline: Offline = False
    sets: Sets = None
    dry_run: DryRun = False
    check: Check = False
    timeout_s: Timeout = None

    @field_validator("trainer", mode="before")
    @classmethod
    def _trainer(cls, value: Any) -> Any:
        if value not in ("verl", "trl"):
            raise InputError(f"--trainer must be verl or trl, got {value!r}")
        return value

    @classmethod
    def parts_into(cls, values: Mapping[str, Any]) -> str | None:
        trainer = values.get("trainer", "verl")
        return trainer if trainer in ("verl", "trl") else None

    @classmethod
    def extra_parts(cls, values: Mapping[str, Any], into: str) -> dict[str, Any]:
        """verl's own ``shared_dir`` option is the flow's ``shared_dir`` (where its checkpoints go)."""
        shared = values.get("shared_dir")
        return {"shared_dir": shared} if into == "verl" and shared is not None else {}

    @field_validator("verl", "trl", mode="before")
    @classmethod
    def _trainer_options(cls, value: Any, info: ValidationInfo) -> Any:
        return _rl_options(VerlOptions if info.field_name == "verl" else TRLOptions, value)

    _check_timeout = field_validator("timeout_s")(_timeout)

    @model_validator(mode="after")
    def _consistent(self) -> "TrainRL":
        _check_with_dry_run(self.check, self.dry_run)
        if self.tool_server is not None:  # a running server is named: the flow starts none
            self.start_tool_server = False
        return self

    def trainer_options(self) -> VerlOptions | TRLOptions | None:
        """The options of ``trainer`` (verl's hold the flow's ``shared_dir``, as the flow plans with them)."""
        return self.verl if self.trainer == "verl" else self.trl


#: Every flow's model, for the tests that hold them to their flows.
MODELS: tuple[type[FlowParams], ...] = (GenerateQA, VerifyPaths, DistillTrajectories, EvaluatePolicy, ExportDatasets,
                                        IngestCorpus, BuildGraphs, Refresh, TrainSFT, TrainRL, Doctor, Smoke,
                                        ReportGraphs, ImportGraphs, ImportProfiles)
#: Every model a command is built from: the flows', the demo's and the profiles export's.
COMMAND_MODELS: tuple[type[Params], ...] = (*MODELS, Demo, ExportProfiles)


def model_of(module: str, name: str) -> type[FlowParams] | None:
    """The model of the flow function ``name`` of ``module``; ``None`` for a flow without one."""
    return next((m for m in MODELS if m.flow == f"{module}:{name}"), None)

__all__ = ["COMMAND_MODELS", "MODELS", "BuildGraphs", "Cli", "Demo", "DistillTrajectories", "Doctor", "EvaluatePolicy",
           "ExportDatasets", "ExportProfiles", "FlowParams", "GenerateQA", "ImportGraphs", "ImportProfiles",
           "IngestCorpus", "Params", "Refresh", "ReportGraphs", "Smoke", "TrainRL", "TrainSFT", "VerifyPaths",
           "choices_of", "cli_of", "flags_of", "is_parameter", "model_of", "option_names", "option_sets"]
