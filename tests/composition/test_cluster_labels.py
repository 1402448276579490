"""Readable cluster labels (mixture/composition/labels.py), one function for the reports, the explorer and the static
page, and one label for a cluster store.json does not list."""

from __future__ import annotations

from mixture.composition.labels import Term, dedup_terms, domain_label, generated_label, label_of

CODE_DOCS = [
    "class TestCase(unittest.TestCase):\n    def test_it(self):\n        self.assertEqual(f(1), 2)\n"
    "        self.assertEqual(g(), 3)\n",
    "def helper(self, path):\n    return self.assertEqual(path, 'x')\n",
]


def test_a_fit_label_becomes_distinct_lower_case_words_and_code_tokens():
    """Issue 16: labels were three capitalised top terms ('Self, Assertequal, Def') repeated in the summary."""
    terms = ["self", "assertequal", "def", "unittest", "test", "tests", "testing", "path"]
    label = domain_label("Self, Assertequal, Def", terms, CODE_DOCS)
    assert label.generated
    assert label.terms == (Term("self", True), Term("assertEqual", True), Term("def", True))
    assert label.text == "self, assertEqual, def"  # spelled as the documents spell it
    assert [t.text for t in label.more] == ["unittest", "test", "path"]  # tests, testing say what test says
    assert not set(label.terms) & set(label.more)  # the terms beside the label do not repeat it


def test_words_are_lower_case_and_acronyms_stay_capitals():
    docs = ["The AWS council meeting minutes. AWS members vote on the motion at the Meeting."] * 3
    label = domain_label("Council, Meeting, Aws", ["council", "meeting", "aws", "meetings", "vote"], docs)
    assert label.terms == (Term("council"), Term("meeting"), Term("AWS"))
    assert label.more == (Term("vote"),)


def test_a_label_a_person_wrote_is_kept_with_the_terms_beside_it():
    label = domain_label("Council and Board Meeting Records", ["council", "board", "boards"], ["the council"])
    assert not label.generated and label.text == "Council and Board Meeting Records"
    assert [t.text for t in label.more] == ["council", "board"]


def test_dedup_and_generated():
    assert dedup_terms(["use", "used", "using", "file", "files", "library", "libraries", "codec", "codecs"]) == [
        "use", "file", "library", "codec"]
    assert generated_label("Self, Assertequal, Def", ["self", "assertequal", "def", "x"])
    assert generated_label("Self, Assertequal, Def, X (7)", ["self", "assertequal", "def", "x"])
    assert generated_label("", ["a"]) and not generated_label("Mathematics", ["proof", "lemma"])


def test_a_cluster_store_json_does_not_list_is_named_by_its_number():
    label = label_of({}, 7)
    assert label.text == "cluster 7" and label.more == ()
