"""Parsing and verifying LLM replacement answers, and the prompt templates (pure, no model)."""

import pytest
from transnli.generator.llm.prompting import (
    NLI_JUDGE,
    REPLACE_ANTONYM,
    judge_prompt,
    load_template,
    quote_word,
    replacement_prompt,
)
from transnli.generator.llm.verify import (
    REASONS,
    check_answer,
    parse_answer,
    target_index,
    tokenize,
    verify_reply,
)

S = "A man is sleeping on a bench."
START, END = S.index("sleeping"), S.index("sleeping") + len("sleeping")


def verdict(reply, sentence=S, word="sleeping"):
    start = sentence.index(word)
    return verify_reply(reply, sentence, start, start + len(word))


# -- prompts --------------------------------------------------------------------------------------
def test_replacement_prompt_is_the_papers_with_the_word_quoted():
    template = load_template(REPLACE_ANTONYM)
    prompt = replacement_prompt(template, S, START, END)
    assert prompt.startswith(
        "Change the meaning of the following sentence to the opposite by "
        "replacing one word in quotation marks with its antonym, do not use "
        "negation, replacing one word at most. Please explain your change."
    )
    assert prompt.rstrip().endswith('A man is "sleeping" on a bench.')
    assert template.id.startswith("replace_antonym@") and len(template.sha) == 12


def test_templates_substitute_literally_and_refuse_missing_fields():
    judge = load_template(NLI_JUDGE)
    text = judge_prompt(judge, "P {with} braces", "H {premise}")
    assert "Premise: P {with} braces" in text and "Hypothesis: H {premise}" in text
    with pytest.raises(KeyError):
        judge.render(premise="only one")
    assert quote_word("Dogs bark.", 5, 9) == 'Dogs "bark".'


# -- tokens ---------------------------------------------------------------------------------------
def test_tokens_split_contractions_and_ignore_quotes():
    assert [t.text for t in tokenize("He isn't 'awake' and can't sleep.")] == [
        "He",
        "is",
        "n't",
        "awake",
        "and",
        "ca",
        "n't",
        "sleep",
    ]
    assert [t.text for t in tokenize("John's well-known dog")] == [
        "John",
        "'s",
        "well",
        "known",
        "dog",
    ]
    toks = tokenize(S)
    assert target_index(toks, START, END) == 3


# -- parsing --------------------------------------------------------------------------------------
GOOD = [
    "A man is awake on a bench.",
    'Modified sentence: "A man is awake on a bench."\n\nExplanation: I replaced "sleeping" with '
    '"awake".',
    '**Original sentence:** A man is "sleeping" on a bench.\n**Modified sentence:** A man is '
    '"awake" on a bench.',
    'A man is awake on a bench. (I changed "sleeping" to its antonym "awake".)',
    "<think>sleeping... the opposite is awake</think>\nA man is awake on a bench.",
    '"A man is sleeping on a bench" -> "A man is awake on a bench"',
    '1. A man is awake on a bench - "sleeping" was replaced by "awake".',
    "```\nA man is awake on a bench.\n```",
    "Sure! Here is the sentence with the opposite meaning:\n\nA man is awake on a bench.\n\n"
    'I replaced the verb "sleeping" with "awake", which means the opposite.',
    "New sentence: A MAN IS AWAKE ON A BENCH",
]


@pytest.mark.parametrize("reply", GOOD)
def test_good_answers_with_explanations_are_parsed_and_pass(reply):
    v = verdict(reply)
    assert v.reason == "ok", (reply, v)
    assert v.modified == "A man is awake on a bench."  # the original, with only that word replaced
    assert (v.old_word, v.new_word) == ("sleeping", "awake")
    assert v.to_dict()["passed"] is True


@pytest.mark.parametrize(
    "reply,reason",
    [
        ("A man is awake off a bench.", "multiple_words_changed"),
        ("A woman is awake on a bench.", "multiple_words_changed"),
        ("A man is wide awake on a bench.", "multiple_words_changed"),  # one word became two
        ("A man is on a bench.", "multiple_words_changed"),  # a deletion is not a replacement
        ("A man is not sleeping on a bench.", "negation_added"),
        ("A man isn't sleeping on a bench.", "negation_added"),
        ("A man is never sleeping on a bench.", "negation_added"),
        ("A man is sleeping without a bench.", "negation_added"),
        ("A woman is sleeping on a bench.", "wrong_position"),
        ("A man is sleeping on a bed.", "wrong_position"),
        ('A man is "sleeping" on a bench.', "no_change"),
        ("a man is sleeping on a bench", "no_change"),  # case and punctuation are not changes
        ("I cannot help with that request.", "unparseable"),
        ("", "unparseable"),
        (None, "unparseable"),
        ("awake", "unparseable"),
    ],
)
def test_failures_get_their_reason(reply, reason):
    v = verdict(reply)
    assert v.reason == reason, (reply, v)
    assert not v.passed and v.modified is None
    assert reason in REASONS


def test_negation_already_in_the_original_is_not_added():
    s = "The man is not sleeping."
    v = verdict("The man is not waking.", s)
    assert v.reason == "ok" and v.modified == "The man is not waking."


def test_echoed_original_is_skipped_for_the_changed_line():
    reply = 'Original: A man is "sleeping" on a bench.\nA man is "awake" on a bench.'
    answer, _ = parse_answer(reply, S)
    assert answer == 'A man is "awake" on a bench.'


def test_article_may_agree_with_the_new_word():
    s = "He ate an old apple."
    v = verdict("He ate a new apple.", s, "old")
    assert v.reason == "ok" and v.modified == "He ate a new apple." and v.article == ("an", "a")
    assert (
        verdict("She has a useful tool.", "She has a useful tool.", "useful").reason == "no_change"
    )


def test_capitalisation_follows_the_original():
    s = "Sleeping dogs lie."
    v = verdict("awake dogs lie.", s, "Sleeping")
    assert v.modified == "Awake dogs lie."
    v = verdict("A man is Awake on a bench.")
    assert v.modified == "A man is awake on a bench."


def test_multi_sentence_originals_use_sentence_windows():
    s = "A man sleeps. He is tired."
    reply = "A man sleeps. He is rested. I replaced tired with rested."
    v = verdict(reply, s, "tired")
    assert v.reason == "ok" and v.modified == "A man sleeps. He is rested."


def test_check_answer_reports_changes():
    v = check_answer("A man is awake off a bench.", S, START, END)
    assert [c["original"] for c in v.changes] == ["sleeping", "on"]
    d = v.to_dict()
    assert d["verdict"] == "multiple_words_changed" and d["passed"] is False
