"""SubscribedTopicRegex syntax and matching: RE2/J's, with Kafka's error messages."""

from __future__ import annotations

import pytest

from odradek.coordinator.group.consumer.regex import (
    InvalidRegex,
    compile_regex,
    invalid_regex_message,
    resolve,
)


@pytest.mark.parametrize(("pattern", "description"), [
    ("(orders", "missing closing )"),
    ("orders)", "regexp/syntax: internal error"),
    ("[a-", "missing closing ]"),
    ("orders\\", "trailing backslash at end of expression"),
    ("*orders", "missing argument to repetition operator"),
    ("a{1001}", "invalid repeat count"),
    ("a{3,2}", "invalid repeat count"),
    ("a**", "invalid nested repetition operator"),
    ("a++", "invalid nested repetition operator"),  # possessive quantifier
    ("(?=a)b", "invalid or unsupported Perl syntax"),  # lookahead
    ("(?<!a)b", "invalid or unsupported Perl syntax"),  # lookbehind
    ("(?>a)", "invalid or unsupported Perl syntax"),  # atomic group
    ("(a)\\1", "invalid escape sequence"),  # backreference
    ("\\Z", "invalid escape sequence"),
    ("\\C", "invalid escape sequence"),  # RE2 accepts it, RE2/J does not
    ("[z-a]", "invalid character class range"),
    ("[[:nope:]]", "invalid character class range"),
    ("\\p{Nope}", "invalid character class range"),
    ("(?P<n>a)(?P<n>b)", "duplicate capture group name"),  # RE2 accepts it
    ("(?P<é>a)", "invalid named capture"),
])
def test_invalid_patterns_get_re2j_descriptions(pattern: str, description: str) -> None:
    with pytest.raises(InvalidRegex) as info:
        compile_regex(pattern)
    assert info.value.description == description


@pytest.mark.parametrize("pattern", [
    "^orders-.*", "orders|payments", "(?i)Orders", "a{,3}", "\\Qa.b\\E", "\\Q\\C\\E",
    "[[:alpha:]_]+", "(?P<name>x)(?<other>y)", "\\pL+", "[\\d-]+", "a{2}b{1,}c{0,3}",
])
def test_valid_patterns_compile(pattern: str) -> None:
    assert compile_regex(pattern) is not None


def test_message_is_kafkas() -> None:
    assert invalid_regex_message("(x", "missing closing )") == (
        "SubscribedTopicRegex `(x` is not a valid regular expression: missing closing ).")


def test_resolution_is_a_full_match_and_keeps_internal_topics() -> None:
    topics = ["orders-eu", "orders", "reorders", "payments", "__consumer_offsets"]
    resolved = resolve(["^orders-.*", "orders", ".*", "(broken"], topics)
    assert resolved == {
        "^orders-.*": {"orders-eu"},
        "orders": {"orders"},
        ".*": set(topics),
        "(broken": set(),
    }
