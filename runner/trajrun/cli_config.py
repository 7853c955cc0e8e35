"""Project configuration: ``[tool.trajrun]`` in ``pyproject.toml``, or a ``trajrun.toml``, found
upward from the working folder as pytest finds its rootdir. Its keys are ``trajrun run``'s long
options (``--junit-xml`` is ``junit_xml``, ``--var`` is the table ``vars``) and ``paths``; they
become click's ``default_map``, so the command line (and an option's environment variable) still
wins."""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import click
from click.core import ParameterSource

from .errors import Location, TrajrunError, did_you_mean, kind

CONFIG_FILES = ("trajrun.toml", "pyproject.toml")
"""What is looked for in each folder, the working folder first, then each parent; the first found
wins."""
CONFIGURED = ("run", "validate")
"""The commands whose options the configuration sets (``validate`` takes the keys it has: paths,
vars, golden_root)."""
_TABLE = {"pyproject.toml": ("tool", "trajrun"), "trajrun.toml": ()}
_KEY_OF = {"var": "vars"}
_NOT_SET_BY_CONFIG = ("watch",)
_DEFAULT_SHOWN = {"paths": ("suites",)}
"""Defaults that the command applies itself (``trajrun run`` with no path and no ``paths`` runs
``suites/``)."""
_HEADER = re.compile(r"^\[\s*([^\[\]]+?)\s*\]")
_ASSIGNED = re.compile(r"""^["']?([\w-]+)["']?\s*[=.]""")


class _Bad(ValueError):
    """A value of the wrong type; ``key`` names the entry of a table (``vars``) that is wrong, if
    one is."""

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


class ConfigErrors(TrajrunError):
    """Every problem of a configuration file, one line each (``file:line: key.path: message``)."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = tuple(lines)


@dataclass(frozen=True, slots=True)
class Setting:
    """One key of the configuration: its value as click takes it (paths made relative to the working
    folder) and the line that sets it (0 when not found)."""

    value: Any
    line: int


@dataclass(frozen=True, slots=True)
class ProjectConfig:
    """The configuration file found and its checked settings, by key."""

    file: Path
    settings: dict[str, Setting]

    @property
    def shown(self) -> str:
        """The file as messages name it: relative to the working folder."""
        return _shown(self.file)

    def where(self, key: str) -> str:
        """``pyproject.toml:12``: where a key is set."""
        line = self.settings[key].line
        return f"{self.shown}:{line}" if line else self.shown


def setting_keys(command: click.Command) -> dict[str, click.Parameter]:
    """Every key the configuration may hold for ``command``: each long option's name without its
    dashes (``--junit-xml`` is ``junit_xml``; ``--var`` is ``vars``), and each argument's name
    (``paths``)."""
    keys: dict[str, click.Parameter] = {}
    for param in command.params:
        if isinstance(param, click.Argument) and param.name:
            keys[param.name] = param
        elif isinstance(param, click.Option) and param.name not in _NOT_SET_BY_CONFIG:
            for opt in param.opts:
                if opt.startswith("--"):
                    name = opt[2:].replace("-", "_")
                    keys[_KEY_OF.get(name, name)] = param
    return keys


def find_config(start: Path) -> tuple[Path, dict[str, Any]] | None:
    """The first ``trajrun.toml``, or ``pyproject.toml`` with a ``[tool.trajrun]`` table, in
    ``start`` or a folder above it, with that table; raises ``ConfigErrors`` when the file is not
    valid TOML."""
    for folder in (start, *start.parents):
        for name in CONFIG_FILES:
            path = folder / name
            if path.is_file() and (table := _read_table(path)) is not None:
                return path, table
    return None


def load_config(command: click.Command, start: Path | None = None) -> ProjectConfig | None:
    """The project configuration for ``command`` (``trajrun run``), checked key by key; None when
    there is none. Raises ``ConfigErrors`` listing every unknown key and every value of the wrong
    type."""
    found = find_config(start or Path.cwd())
    if found is None:
        return None
    path, table = found
    keys = setting_keys(command)
    lines = _key_lines(path.read_text(encoding="utf-8"), _TABLE[path.name])
    settings: dict[str, Setting] = {}
    problems: list[str] = []
    for key, value in table.items():
        if key not in keys:
            close = did_you_mean(key, sorted(keys))
            problems.append(f"{_loc(path, lines, (key,))}: unknown key{close}")
            continue
        try:
            value = _value(keys[key], key, value, path.parent)
            settings[key] = Setting(value, lines.get((key,), 0))
        except _Bad as exc:
            problems.append(f"{_loc(path, lines, (key, exc.key) if exc.key else (key,))}: {exc}")
    if problems:
        raise ConfigErrors(problems)
    return ProjectConfig(path, settings)


def default_map(group: click.Group, config: ProjectConfig | None) -> dict[str, dict[str, Any]]:
    """click's ``default_map`` for the configured commands: each command gets the settings naming
    its parameters."""
    run_defaults = command_defaults(group.commands["run"], config)
    return {
        name: {
            param.name: run_defaults[param.name]
            for param in group.commands[name].params
            if param.name in run_defaults
        }
        for name in CONFIGURED
    }


def command_defaults(command: click.Command, config: ProjectConfig | None) -> dict[str, Any]:
    """The configuration's values by parameter name (``vars`` sets ``variables``), for click's
    ``default_map``."""
    keys = setting_keys(command)
    settings = config.settings if config else {}
    return {keys[key].name: setting.value for key, setting in settings.items()}


def effective(
    command: click.Command, config: ProjectConfig | None
) -> Iterator[tuple[str, str, str]]:
    """Each setting of ``command`` (one key per option: its longest name), its value in TOML words,
    and where click takes it from: the option's environment variable, the configuration file and
    line, or the default."""
    ctx = command.make_context(
        command.name, [], default_map=command_defaults(command, config), resilient_parsing=True
    )
    keys = setting_keys(command)
    for param in command.params:
        names = [key for key, of in keys.items() if of is param]
        if not names or not param.name:
            continue
        key, value = max(names, key=len), ctx.params.get(param.name)
        source = ctx.get_parameter_source(param.name)
        if source is ParameterSource.ENVIRONMENT:
            shown = f"environment {next(var for var in _envvars(param) if var in os.environ)}"
        elif source is ParameterSource.DEFAULT_MAP and config is not None:
            shown = config.where(next(name for name in names if name in config.settings))
        else:
            value, shown = _DEFAULT_SHOWN.get(key, value), "default"
        yield key, _toml(value, key == "vars"), shown


def _loc(path: Path, lines: dict[tuple[str, ...], int], key: tuple[str, ...]) -> Location:
    """Where a key of the trajrun table is: the file, its line (or its table's), the key path."""
    line = lines.get(key) or lines.get(key[:1], 0)
    return Location(_shown(path), line, 0, ".".join((*_TABLE[path.name], *key)))


def _envvars(param: click.Parameter) -> tuple[str, ...]:
    """The environment variables an option reads (``--golden-root``: ``TRAJRUN_GOLDEN_ROOT``)."""
    envvar = param.envvar
    if not envvar:
        return ()
    return (envvar,) if isinstance(envvar, str) else tuple(envvar)


def _read_table(path: Path) -> dict[str, Any] | None:
    """The trajrun table of a configuration file: all of ``trajrun.toml``, ``[tool.trajrun]`` of
    ``pyproject.toml`` (None without one)."""
    text = path.read_text(encoding="utf-8")
    if path.name == "pyproject.toml" and "trajrun" not in text:
        return None  # most projects' pyproject.toml: not worth parsing
    data: Any = _parse_toml(text, path)
    for part in _TABLE[path.name]:
        data = data.get(part) if isinstance(data, dict) else None
    if data is None:
        return None
    if not isinstance(data, dict):
        message = f"tool.trajrun must be a table ([tool.trajrun]), found {kind(data)}"
        raise ConfigErrors([f"{_shown(path)}: {message}"])
    return data


def _parse_toml(text: str, path: Path) -> dict[str, Any]:
    """A TOML document; ``ConfigErrors`` naming the file, line and
    column when it is not valid TOML."""
    if sys.version_info >= (3, 11):
        import tomllib  # deferred: only a project with a configuration file pays for it
    else:
        import tomli as tomllib  # deferred, as tomllib is (3.10 only: 3.11 has tomllib)

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigErrors([f"{_shown(path)}: not valid TOML: {exc}"]) from None


def _key_lines(text: str, table: tuple[str, ...]) -> dict[tuple[str, ...], int]:
    """The line setting each key of the trajrun table (``("jobs",)``) and of its sub-tables
    (``("vars", "city")``; the header ``[tool.trajrun.vars]`` sets ``("vars",)``), for messages;
    keys written some other way are left out."""
    lines: dict[tuple[str, ...], int] = {}
    inside: tuple[str, ...] | None = () if not table else None
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        header = _HEADER.match(stripped)
        if header:
            parts = tuple(part.strip().strip("\"'") for part in header[1].split("."))
            inside = parts[len(table) :] if parts[: len(table)] == table else None
            if inside:
                lines.setdefault(inside, number)
        elif inside is not None and (assigned := _ASSIGNED.match(stripped)):
            lines.setdefault((*inside, assigned[1]), number)
    return lines


def _value(param: click.Parameter, key: str, value: Any, folder: Path) -> Any:
    """A setting's value as click takes it for ``param``; paths are relative to the configuration's
    folder. Raises ``_Bad`` saying what was expected and found."""
    if key == "vars":
        return _vars(value)
    if isinstance(param, click.Argument) or (isinstance(param, click.Option) and param.multiple):
        if not isinstance(value, list):
            raise _Bad(f"expected a list ({key} = [...]), found {kind(value)}")
        return tuple(_scalar(param, item, folder) for item in value)
    return _scalar(param, value, folder)


def _scalar(param: click.Parameter, value: Any, folder: Path) -> Any:
    """One value of ``param``'s type; a path relative to ``folder`` is made relative to the working
    folder."""
    types, expected = _expected(param)
    if (isinstance(value, bool) and bool not in types) or not isinstance(value, types):
        raise _Bad(f"expected {expected}, found {kind(_plain(value))}")
    if isinstance(param.type, click.Choice) and value not in param.type.choices:
        choices = [str(choice) for choice in param.type.choices]
        close = did_you_mean(str(value), choices)
        raise _Bad(
            f"expected one of {', '.join(choices)}, found {kind(value)}"
            f"{close if close.startswith(' —') else ''}"
        )
    if isinstance(param.type, click.Path) and value != "-":
        value = _shown(folder / str(value))
    if isinstance(param, click.Option) and (param.is_flag or param.count):
        return value
    try:
        param.type.convert(value, param, None)
    except click.BadParameter as exc:
        raise _Bad(exc.message) from None
    return value


def _expected(param: click.Parameter) -> tuple[tuple[type, ...], str]:
    """The TOML types a parameter takes, and how a message names them."""
    if isinstance(param, click.Option) and param.is_flag:
        return (bool,), "true or false"
    counted = isinstance(param, click.Option) and param.count
    if counted or isinstance(param.type, click.types.IntParamType):
        return (int,), "a whole number"
    if isinstance(param.type, click.types.FloatParamType):
        return (int, float), "a number"
    if isinstance(param.type, (click.types.StringParamType, click.Path, click.Choice)):
        return (str,), "a string"
    return (str, int), f"a string or a whole number ({param.type.name})"


def _vars(value: Any) -> tuple[str, ...]:
    """The ``vars`` table as ``--var`` items; a string stays a string (quoted), a number or boolean
    stays one."""
    if not isinstance(value, dict):
        raise _Bad(
            "expected a table of variables ([tool.trajrun.vars] or "
            f'vars = {{city = "Paris"}}), '
            f"found {kind(_plain(value))}"
        )
    items = []
    for name, item in value.items():
        if not name.isidentifier():
            raise _Bad("a variable name is letters, digits and _, not first a digit", name)
        if not isinstance(item, (str, int, float)):
            raise _Bad(f"expected a string, number or boolean, found {kind(_plain(item))}", name)
        items.append(f"{name}={json.dumps(item)}")
    return tuple(items)


def _plain(value: Any) -> Any:
    """A TOML value as ``kind`` names it (a date or time is named by its type)."""
    return value if isinstance(value, (str, int, float, bool, list, dict)) else type(value).__name__


def _toml(value: Any, variables: bool = False) -> str:
    """A value in TOML words for ``trajrun config``: ``"report.xml"``, ``2``, ``true``,
    ``["suites"]``, ``{city = "Paris"}`` for ``vars``; unset is ``-``."""
    if value is None or value == () and not variables:
        return "-"
    if variables:
        pairs = (item.split("=", 1) for item in value)
        return "{" + ", ".join(f"{name} = {raw}" for name, raw in pairs) + "}"
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(_toml(item) for item in value) + "]"
    return json.dumps(value)


def _shown(path: Path) -> str:
    """A path relative to the working folder (``../suites`` from a subfolder), absolute on another
    drive."""
    try:
        return Path(os.path.relpath(path)).as_posix()
    except ValueError:
        return str(Path(os.path.abspath(path)))
