from __future__ import annotations

import pytest

from odradek.broker.security.jaas import JaasError, parse_jaas, single_module

PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"


def test_plain_users() -> None:
    m = single_module(f'{PLAIN} required username="admin" password="a;b=c" '
                      'user_admin="a;b=c" user_alice=alice-pw;')
    assert m.name == PLAIN and m.flag == "required"
    assert m.options == {"username": "admin", "password": "a;b=c", "user_admin": "a;b=c",
                         "user_alice": "alice-pw"}


def test_escapes_and_whitespace() -> None:
    m = single_module(f'  {PLAIN}\n  REQUIRED\n  user_x = "q\\"uote\\\\" ;  ')
    assert m.flag == "required" and m.options == {"user_x": 'q"uote\\'}


def test_several_modules() -> None:
    mods = parse_jaas(f"{PLAIN} required; other.Module optional a=1;")
    assert [m.name for m in mods] == [PLAIN, "other.Module"]
    with pytest.raises(JaasError, match="exactly one"):
        single_module(f"{PLAIN} required; other.Module optional a=1;")


@pytest.mark.parametrize("text", [
    "", ";", f"{PLAIN}", f"{PLAIN};", f"{PLAIN} mandatory a=1;", f"{PLAIN} required a=1",
    f'{PLAIN} required a="unterminated;', f"{PLAIN} required a=;", f"{PLAIN} required =1;",
    f"{PLAIN} required a 1;", '"quoted.Module" required;',
])
def test_malformed(text: str) -> None:
    with pytest.raises(JaasError) as e:
        parse_jaas(text)
    assert "pw" not in str(e.value)


def test_errors_never_echo_values() -> None:
    with pytest.raises(JaasError) as e:
        parse_jaas(f'{PLAIN} required user_a="s3cret" user_b')
    assert "s3cret" not in str(e.value)
