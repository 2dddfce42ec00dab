"""Every integer of an agent spec takes a whole number written as a float (``37.0``): JSON Schema
counts it as an integer, and the specs are validated strictly, which would not. Schemathesis
found one that did not (``llm.max_retries``); this looks at all of them, every kind."""

from __future__ import annotations

import inspect
import typing
from typing import Any

import pytest
from pydantic import BaseModel

from taskwire import specs


def _mentions_int(annotation: Any) -> bool:
    if annotation is int:
        return True
    return any(_mentions_int(arg) for arg in typing.get_args(annotation))


def _coerced(annotation: Any, metadata: list[Any]) -> bool:
    found = any(getattr(m, "func", None) is specs._integral for m in metadata)
    return found or any(_coerced(arg, list(getattr(arg, "__metadata__", ()))) for arg in typing.get_args(annotation))


SPEC_MODELS = [obj for obj in vars(specs).values()
               if inspect.isclass(obj) and issubclass(obj, BaseModel) and obj.__module__ == specs.__name__]
INTEGER_FIELDS = [(model.__name__, name) for model in SPEC_MODELS for name, field in model.model_fields.items()
                  if _mentions_int(field.annotation)]


def test_the_specs_have_integer_fields_to_check() -> None:
    assert ("LLMSpec", "max_retries") in INTEGER_FIELDS and ("OpenHandsAgentSpec", "tool_concurrency_limit") in INTEGER_FIELDS


@pytest.mark.parametrize("model_name, field_name", INTEGER_FIELDS)
def test_an_integer_field_takes_a_whole_float(model_name: str, field_name: str) -> None:
    field = getattr(specs, model_name).model_fields[field_name]
    assert _coerced(field.annotation, field.metadata), f"{model_name}.{field_name} refuses 37.0 (add _integral)"


def test_a_whole_float_becomes_an_int_and_a_fraction_is_refused() -> None:
    llm = specs.LLMSpec.model_validate({"max_retries": 37.0, "max_concurrency": 2.0})
    assert (llm.max_retries, llm.max_concurrency) == (37, 2) and isinstance(llm.max_retries, int)
    with pytest.raises(ValueError, match="max_retries"):
        specs.LLMSpec.model_validate({"max_retries": 2.5})
