"""Settings in the wrong form, said in one line: which setting, and the form it takes.

``load_settings`` builds ``Settings`` and turns pydantic's errors (a value that does not parse,
one that does not validate) into ``SettingsProblem``, so ``taskwire serve`` can end start-up
with that line instead of a traceback. The value given is never repeated: it may be a key.
"""

from __future__ import annotations

import re
import types
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from pydantic_settings import SettingsError

from .settings import Settings

_FIELD = re.compile(r'field "([a-z_]+)"')


class SettingsProblem(Exception):
    """A setting given in a form it does not take; ``str()`` is the one line to show."""


def load_settings(**overrides: Any) -> Settings:
    """``Settings(**overrides)``; raises ``SettingsProblem`` for a setting in the wrong form."""
    try:
        return Settings(**overrides)
    except SettingsError as exc:  # a value the source could not decode (not JSON, say)
        match = _FIELD.search(str(exc))
        raise SettingsProblem(_line(match.group(1) if match else None, "does not parse")) from None
    except ValidationError as exc:
        error = exc.errors()[0]
        name = str(error["loc"][0]) if error["loc"] else None
        raise SettingsProblem(_line(name, f"is invalid ({error['msg'].lower()})")) from None


def expected_form(field: FieldInfo) -> str:
    """How a setting of this type is written in the environment or the TOML file."""
    return _form(field.annotation)


def _line(name: str | None, what: str) -> str:
    if name is None or name not in Settings.model_fields:
        return f"a setting {what}; see docs/configuration.md"
    return f"OH_{name.upper()} {what}: expected {expected_form(Settings.model_fields[name])} (docs/configuration.md)"


def _form(annotation: Any) -> str:
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return _form(args[0])
    if origin in (typing.Union, types.UnionType):
        forms = [_form(a) for a in args if a is not type(None)]
        return " or ".join(dict.fromkeys(forms))
    if origin is typing.Literal:
        return "one of " + ", ".join(str(a) for a in args)
    if origin is list:
        return f"a JSON list of {_plural(_form(args[0]))}" if args else "a JSON list"
    if origin is dict:
        return "a JSON object"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "a JSON object"
    return {bool: "true or false", int: "an integer", float: "a number", str: "text", Path: "a path"}.get(
        annotation, "a value of its documented form"
    )


def _plural(form: str) -> str:
    return {"text": "strings", "a path": "paths", "an integer": "integers", "a number": "numbers",
            "a JSON object": "objects"}.get(form, form)
