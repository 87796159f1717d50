"""JSONPath subset: parse/format round-trips, normalization, errors, get/set/remove."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from state.paths import (
    PathError,
    PathExists,
    PathNotFound,
    format_path,
    get_path,
    insert_path,
    normalize_path,
    parse_path,
    remove_path,
    set_path,
)

segments = st.lists(st.one_of(st.text(max_size=12), st.integers(min_value=-50, max_value=50)), max_size=6).map(tuple)


@given(segments)
def test_parse_format_round_trips(path):
    assert parse_path(format_path(path)) == path


@given(segments)
def test_format_of_parse_is_canonical(path):
    text = format_path(path)
    assert normalize_path(text) == text


def test_normalizes_spellings():
    assert normalize_path("$['a'][\"b\"].c[3][-1]") == "$.a.b.c[3][-1]"
    assert normalize_path("$['key with.dots']") == "$['key with.dots']"
    assert parse_path("$['it\\'s']") == ("it's",)


@pytest.mark.parametrize("text", ["", "a.b", "$.", "$..a", "$[", "$['open", "$[1", "$[x]", "$.a b", "$.1a"])
def test_invalid_paths_say_why(text):
    with pytest.raises(PathError) as exc:
        parse_path(text)
    assert str(exc.value)


def test_get_set_remove():
    doc = {"a": {"list": [1, 2, 3]}}
    assert get_path(doc, parse_path("$.a.list[-1]")) == 3
    set_path(doc, parse_path("$.a.list[0]"), 9)
    insert_path(doc, parse_path("$.b.c"), "new")
    assert doc == {"a": {"list": [9, 2, 3]}, "b": {"c": "new"}}
    with pytest.raises(PathExists):
        insert_path(doc, parse_path("$.b.c"), "again")
    assert remove_path(doc, parse_path("$.a.list[1]")) == 2
    with pytest.raises(PathNotFound):
        remove_path(doc, parse_path("$.zzz"))
    with pytest.raises(PathNotFound):
        get_path(doc, parse_path("$.a.list[7]"))
