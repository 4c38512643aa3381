"""The ``email`` normalizer (er_plugins.normalize_emails): hand-picked cases, idempotence."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from normalizer_cases import idempotence_settings, idempotent, norm, text_values


def test_email():
    assert norm("email", "  John.Doe@Example.COM ") == "john.doe@example.com"
    assert norm("email", "mailto:x@y.org") == "x@y.org"
    for bad in ["john", "a@b@c", "@example.com", "john@", "john doe@x.com", "@"]:
        assert norm("email", bad) is None, bad
    assert norm("email", "John.Doe+news@GoogleMail.com") == "john.doe+news@googlemail.com"
    assert norm("email", "John.Doe+news@GoogleMail.com", gmail_dots=True) == "johndoe@gmail.com"
    assert norm("email", "j.doe+x@yahoo.com", gmail_dots=True) == "j.doe+x@yahoo.com"


@idempotence_settings
@given(
    text_values | st.from_regex(r"[ A-Za-z.+]{0,10}@[A-Za-z.]{0,10}", fullmatch=True),
    st.booleans(),
)
def test_email_idempotent(value, gmail_dots):
    idempotent("email", value, gmail_dots=gmail_dots)
