"""Typer commands built from the parameter models (``flows.params``): a verb declares its own options only for what
is not a parameter (``--config``, ``--gguf``), and takes the checked model.

Each field the command line offers becomes one option: its flags from the field's ``Cli`` (default ``--`` and the
field name with dashes; a bool ``--x/--no-x``), its help from the description, its default from the field, a
``Literal`` field's choices as its metavar, a list or tuple field a repeatable option, a field given in another form
(``Cli.as_type``) that form, a field the command line requires (``Cli.required``) a required option (or argument).
The values given are checked by the model; a bad one is the model's ``InputError`` (a bad trainer option the trainer
model's ``TrainingError``), which the CLI prints as one line with exit status 2, before any flow starts."""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal, Optional, Union, get_args, get_origin

import typer

from flows.params import Params, choices_of, cli_of, option_names


def _plain(annotation: Any) -> Any:
    """``annotation`` without ``None`` in it (``int | None`` is ``int``)."""
    if get_origin(annotation) in (Union, types.UnionType):
        rest = [a for a in get_args(annotation) if a is not type(None)]
        if len(rest) == 1:
            return rest[0]
    return annotation


def _is_many(annotation: Any) -> bool:
    return get_origin(_plain(annotation)) in (list, tuple, Sequence)


def _option_type(annotation: Any) -> Any:
    """The type typer parses a field's value as (a repeatable option's item type for a list)."""
    plain = _plain(annotation)
    if _is_many(plain):
        return list[_option_type(get_args(plain)[0])]  # type: ignore[misc]
    if get_origin(plain) is Literal:
        return type(get_args(plain)[0])
    if plain is Any or get_origin(plain) is dict:
        raise TypeError(f"no command-line form for {annotation!r}: hide the field or give it Cli(as_type=...)")
    return plain


def _parameter(model: type[Params], name: str) -> inspect.Parameter:
    """The typer parameter of one field."""
    field, cli = model.model_fields[name], cli_of(model, name)
    help_text = cli.help or field.description
    if cli.argument:
        default = typer.Argument(... if field.is_required() or cli.required else field.default, help=help_text)
        return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default,
                                 annotation=cli.as_type or _option_type(field.annotation))
    annotation = cli.as_type or _option_type(field.annotation)
    if cli.required:
        value = inspect.Parameter.empty
    elif cli.as_type is not None:
        value = cli.default
    elif _is_many(field.annotation):
        value = None  # not given: the field's default
    else:
        value = field.default
    choices = choices_of(field.annotation) if cli.as_type is None else ()
    metavar = "[" + "|".join(map(str, choices)) + "]" if choices else None
    option = typer.Option(*option_names(model, name), help=help_text, metavar=metavar)
    # typer's Annotated form: the default is the parameter's own, as in a verb written by hand
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=value,
                             annotation=Annotated[Optional[annotation] if value is None else annotation, option])


def model_values(model: type[Params], given: dict[str, Any]) -> dict[str, Any]:
    """The model's values from the options given: a repeatable option not given leaves the field's default, a
    value in another form becomes the field's (``Cli.to_flow``)."""
    values: dict[str, Any] = {}
    for name, value in given.items():
        cli = cli_of(model, name)
        if value is None and _is_many(model.model_fields[name].annotation):
            continue
        values[name] = cli.to_flow(value) if cli.to_flow is not None else value
    return values


def model_command(group: typer.Typer, name: str, model: type[Params],
                  run: Callable[[Callable[[], Any]], Any]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated verb on ``group`` as ``name``: ``verb(params, **own)`` gets the checked ``model``
    and its own options (the parameters after the first, declared as typer options as usual). ``run`` runs the
    body (the CLI's: one line and exit status 2 for an expected failure), the model's check included. The decorated
    name is the command: its signature is the command line's, one keyword parameter an option with its default;
    ``command.model`` is the model, ``command.verb`` the body."""

    def wrap(verb: Callable[..., Any]) -> Callable[..., Any]:
        own = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
               for p in list(inspect.signature(verb, eval_str=True).parameters.values())[1:]]
        fields = [_parameter(model, n) for n in model.model_fields if not cli_of(model, n).hidden]
        clash = {p.name for p in own} & {p.name for p in fields}
        if clash:
            raise TypeError(f"{verb.__name__}: options {sorted(clash)} are fields of {model.__name__} already")

        def command(**given: Any) -> Any:
            mine = {p.name: given.pop(p.name) for p in own}
            return run(lambda: verb(model.check(model_values(model, given)), **mine))

        params = own + fields
        command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params}
        command.__name__, command.__doc__, command.__module__ = verb.__name__, verb.__doc__, verb.__module__
        command.model, command.verb = model, verb  # type: ignore[attr-defined]
        group.command(name)(command)
        return command

    return wrap


__all__ = ["model_command", "model_values"]
