"""Candidate filters (transnli.generator.filters) on sentences parsed by spaCy's small model and
judged from the real WordNet 3.0: each filter with sentences it must catch and ones it must pass."""

import pytest
from filter_items import item, verdicts
from transnli.generator.filters import build_filters
from transnli.generator.filters.coreference import CoreferenceFilter
from transnli.generator.filters.function_verbs import AuxiliaryFilter, LightVerbFilter
from transnli.generator.filters.phrases import FixedPhraseFilter, LicensingFilter
from transnli.generator.filters.senses import RareSenseFilter, SenseFitFilter
from transnli.generator.filters.verb import ArgumentStructureFilter

pytestmark = pytest.mark.slow


def test_auxiliary_catches_copula_modals_and_auxiliaries(tagger):
    caught = [
        ("There are eight bits in a byte", "are", "differ", "v"),
        ("The results were surprising", "were", "differ", "v"),
        ("She has eaten the whole cake", "has", "lack", "v"),
    ]
    passed = [("She runs every morning", "runs", "walk", "v")]
    assert verdicts(AuxiliaryFilter(), tagger, caught) == [False] * 3
    assert verdicts(AuxiliaryFilter(), tagger, passed) == [True]
    # --include-aux asks for them: the paper's setting
    assert verdicts(AuxiliaryFilter(include_aux=True), tagger, caught) == [True] * 3


def test_light_verb_catches_abstract_objects_and_clauses(tagger):
    caught = [
        ("He made a strong case for reform", "made", "unmake", "v"),
        ("She took a long walk after dinner", "took", "give", "v"),
        ("You ought to have your head examined", "have", "lack", "v"),
        ("She had a look at the report", "had", "lack", "v"),
    ]
    passed = [
        ("People who have experience in cookery are needed", "have", "lack", "v"),
        ("She gave the boy a sandwich", "gave", "take", "v"),
    ]
    assert verdicts(LightVerbFilter(), tagger, caught) == [False] * 4
    assert verdicts(LightVerbFilter(), tagger, passed) == [True, True]


def test_licensing_needs_a_licensor_a_new_word_and_a_slot(tagger):
    caught = [
        ("You never hesitate", "never", "ever", "r"),
        ("It matters whether you win or lose", "win", "lose", "v"),
        ("In certain conditions the reaction reappears", "certain", "uncertain", "a"),
        ("Five different cars are nearby", "different", "same", "a"),
        ("Models such as BERT fail on these pairs", "such", "little", "a"),
    ]
    passed = [
        ("Did you never hesitate?", "never", "ever", "r"),
        ("Come here and give me a big hug", "big", "little", "a"),
        ("The different cars are nearby", "different", "same", "a"),
        ("Such models fail on these pairs", "Such", "little", "a"),
    ]
    assert verdicts(LicensingFilter(), tagger, caught) == [False] * 5
    assert verdicts(LicensingFilter(), tagger, passed) == [True] * 4


def test_rare_sense_catches_antonyms_of_rare_senses_only(tagger):
    caught = [
        # "sentence": the grammatical sense is first; "acquittal" opposes the legal one
        ("Each sentence has a subject and a verb", "sentence", "acquittal", "n"),
        # "key": the music sense (atonality) is rare beside the key of a lock
        ("The key opens the front door", "key", "atonality", "n"),
    ]
    passed = [
        ("Prices rose sharply last year", "rose", "fall", "v"),  # the first sense carries it
        ("She opened the door", "opened", "close", "v"),
        ("The old man is happy", "happy", "unhappy", "a"),  # adjectives are not its business
    ]
    flt = RareSenseFilter()
    assert verdicts(flt, tagger, caught) == [False, False]
    assert verdicts(flt, tagger, passed) == [True] * 3
    verdict = flt.judge_many([item(tagger, *caught[0])])[0]
    assert verdict.details["antonym_sense_prior"] < 0.3 and "rare senses" in verdict.reason


def test_argument_structure_from_wordnet_verb_frames(tagger):
    caught = [
        ("The washing machine needs to be serviced", "needs", "obviate", "v"),
        ("It set the norm for American homes", "set", "rise", "v"),
        ("The instructor gave the boy a passing grade", "gave", "take", "v"),
    ]
    passed = [
        ("Prices rose sharply last year", "rose", "fall", "v"),
        ("She opened the door", "opened", "close", "v"),
    ]
    assert verdicts(ArgumentStructureFilter(), tagger, caught) == [False] * 3
    assert verdicts(ArgumentStructureFilter(), tagger, passed) == [True, True]


def test_fixed_phrase_time_expressions_and_possessive_idioms(tagger):
    caught = [
        ("I saw him last Thursday", "last", "first", "a"),
        ("He did his best to help", "did", "unmake", "v"),
        ("The meeting takes place at noon", "takes", "give", "v"),
    ]
    passed = [("The last chapter was long", "last", "first", "a")]
    assert verdicts(FixedPhraseFilter(), tagger, caught) == [False] * 3
    assert verdicts(FixedPhraseFilter(), tagger, passed) == [True]


def test_coreference_gendered_swap_with_a_pronoun_left(tagger):
    caught = [
        ("He was a shy man", "man", "woman", "n"),
        ("A girl lifts her hand", "girl", "boy", "n"),
    ]
    passed = [
        ("The man was shy", "man", "woman", "n"),
        ("The king and his guard left", "guard", "king", "n"),
    ]
    assert verdicts(CoreferenceFilter(), tagger, caught) == [False, False]
    assert verdicts(CoreferenceFilter(), tagger, passed) == [True, True]


def test_build_filters_keeps_canonical_order_and_rejects_unknown_names():
    names = [f.name for f in build_filters(["coreference", "auxiliary"])]
    assert names == ["auxiliary", "coreference"]
    with pytest.raises(ValueError, match="unknown filter"):
        build_filters(["sense"])


def test_sense_fit_rejects_an_antonym_of_a_sense_the_word_is_not_used_in(tagger):
    from transnli.generator.vectors import AntonymRanker, load_vectors

    flt = SenseFitFilter(AntonymRanker(load_vectors()))
    [difficult, easy] = flt.judge_many(
        [
            item(tagger, "It is hard to explain the rules", "hard", "soft", "a"),
            item(tagger, "It is hard to explain the rules", "hard", "easy", "a"),
        ]
    )
    assert not difficult.passed and "soft" in difficult.reason and difficult.details["sense"]
    assert easy.passed
