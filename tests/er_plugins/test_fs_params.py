"""Tests of er_plugins.fs_params: the fellegi_sunter verifier's parameters.

* FellegiSunterParams: no default fields, its checks, the example fields;
* FSField's term frequencies: on by default for name fields only, refused where level 0 is not equality.
"""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from records_cases import CUSTOMER_FS_FIELDS

from er_framework.components import Context
from er_plugins.fellegi_sunter import FellegiSunter
from er_plugins.fs_params import FellegiSunterParams, FSField


def test_fellegi_sunter_params():
    with pytest.raises(ValidationError, match="fields"):
        FellegiSunterParams()  # no default fields: the job names the fields it compares
    example = FellegiSunterParams.model_fields["fields"].examples  # shown when a job leaves fields: out
    assert example and FellegiSunterParams(fields=example[0]).fields[2].label == "location"
    p = FellegiSunterParams(fields=CUSTOMER_FS_FIELDS)
    assert [f.label for f in p.fields] == ["first_name", "last_name", "location", "phone", "email", "dob"]
    assert p.fields[2].field == ["address", "city", "zip"]
    assert p.fields[3].thresholds == [100.0] and p.fields[0].level_names() == ["=100", ">=92", ">=80", "<80"]
    for bad in (
        {"fields": [{"field": "a", "levels": [90, 100]}]},
        {"fields": [{"field": "a", "levels": [100, 0]}]},
        {"fields": [{"field": "a", "comparison": "exact", "levels": [100, 50]}]},
        {"fix_u": True, "u_from_random_pairs": 0},
        {"threshold": 2.0},
    ):
        with pytest.raises(ValidationError):
            FellegiSunterParams(**bad)
    assert FellegiSunter.check(FellegiSunterParams(fields=CUSTOMER_FS_FIELDS), Context()) != []  # no threshold anywhere
    assert FellegiSunter.check(FellegiSunterParams(fields=CUSTOMER_FS_FIELDS), Context(threshold=0.5)) == []
    assert FellegiSunter(FellegiSunterParams(fields=CUSTOMER_FS_FIELDS), Context(threshold=0.5)).threshold == 0.5


def test_term_frequency_defaults_and_checks():
    assert FSField(field="a", comparison="jaro_winkler").tf
    assert not FSField(field="a", comparison="exact").tf
    assert FSField(field="a", comparison="exact", term_frequency=True).tf
    assert not FSField(field="a", comparison="jaro_winkler", term_frequency=False).tf
    assert not FSField(field="a", comparison="jaro_winkler", levels=[95, 80]).tf  # no exact level
    with pytest.raises(ValidationError, match="term_frequency"):
        FSField(field="a", comparison="token_set_ratio", term_frequency=True)


def test_term_frequency_on_ladders():
    """A ladder of text rules starting with exact takes term frequencies (by default with a jaro_winkler or
    phonetic rule); a ladder on numbers or dates does not."""
    name = FSField(field="a", ladder=["exact", {"comparison": "jaro_winkler", "at_least": 90}])
    assert name.tf_capable and name.tf
    plain = FSField(field="a", ladder=["exact", {"comparison": "token_set_ratio", "at_least": 90}])
    assert plain.tf_capable and not plain.tf
    years = FSField(field="y", ladder=["exact", {"comparison": "difference", "at_most": 1}])
    assert not years.tf_capable and not years.tf
    with pytest.raises(ValidationError, match="term_frequency"):
        FSField(field="y", ladder=["exact", {"comparison": "difference", "at_most": 1}], term_frequency=True)
