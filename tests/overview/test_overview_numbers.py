"""mixture.composition.numbers: every number of the page written one way."""

from __future__ import annotations

import math

import pytest

from mixture.composition import numbers


@pytest.mark.parametrize(("value", "text"), [
    (0, "0"), (950, "950"), (999.6, "1,000"), (1_000, "1.00K"), (12_345, "12.3K"), (28_000_000, "28.0M"),
    (27_951_358, "28.0M"), (999_960, "1.00M"), (99.96e6, "100M"), (9.996e6, "10.0M"), (669.6e9, "670B"),
    (1.7412e12, "1.74T"), (23.106e12, "23.1T"), (1.2e15, "1200T"), (-5e6, "-5.00M"), (None, "–"),
    (math.nan, "–"),
])
def test_tokens_three_significant_digits(value, text):
    assert numbers.tokens(value) == text


def test_tokens_headline_precision():
    assert numbers.tokens(23.106e12, 4) == "23.11T"  # the published headline


@pytest.mark.parametrize(("value", "digits", "text"), [
    (0.07523, 2, "7.52%"), (0.5, 1, "50.0%"), (0, 2, "0.00%"), (1, 2, "100.00%"), (0.00001, 2, "<0.01%"),
    (0.0004, 1, "<0.1%"), (0.00005, 2, "0.01%"), (None, 2, "–"), (math.nan, 1, "–"),
])
def test_pct(value, digits, text):
    assert numbers.pct(value, digits) == text


def test_count_enrichment_epochs_weight():
    assert numbers.count(1234567) == "1,234,567"
    assert numbers.count(12.6) == "13"
    assert numbers.count(None) == "–"
    assert numbers.enrichment(1.4236) == "×1.42"
    assert numbers.enrichment(math.nan) == numbers.enrichment(math.inf) == numbers.enrichment(None) == "×–"
    assert numbers.epochs(2.104) == "2.10"
    assert numbers.epochs(math.inf) == "∞"
    assert numbers.weight(0.012345) == "0.01235"
    assert numbers.weight(None) == "–"


@pytest.mark.parametrize(("value", "text"), [
    (0.012345, "0.01235"), (5.8594e-05, "0.00005859"), (0.0001, "0.0001"), (0, "0"), (1.0, "1"), (math.nan, "–")])
def test_weight_never_in_exponent_notation(value, text):
    assert numbers.weight(value) == text
