"""Negation of a sentence's main clause, from its dependency parse (issue 19, item 2).

H¬ is H with the main clause's polarity flipped and nothing else changed:

- a finite auxiliary or copula takes "not" after it ("is" -> "is not", "has played" -> "has not
  played", "will" -> "will not", "'s playing" -> "'s not playing"); "can" becomes "cannot";
- a finite lexical verb takes do-support ("plays" -> "does not play", "played" -> "did not play",
  "play" -> "do not play"), with "do"/"does" chosen by the verb's tag, or by the subject when the
  tag says nothing of person; a pre-verbal adverb stays inside the negation's scope ("always
  plays" -> "does not always play"), and verbs coordinated with the main verb (without a subject
  of their own) go to their base form ("sits and reads" -> "does not sit and read");
- an existing "not"/"n't" of the main clause is removed ("is not" -> "is", "isn't" -> "is",
  "cannot"/"can't" -> "can", "won't" -> "will"), and with it the do-support it needed ("does not
  play"/"doesn't play" -> "plays", "didn't play" -> "played"); "any"-words it licensed become
  "some"-words ("doesn't have any money" -> "has some money").

Only the edited span changes: every other character of H (spacing, punctuation, capitals) is kept.

Sentences with no clean negation are declined with a counted reason (REASONS) rather than
negated badly: no finite verb or no subject in the main clause ("A man playing guitar."),
imperatives, questions, several sentences, "never" or a negative word in the main clause ("No one
is here": its negation is not a matter of adding "not"), universal or majority subjects ("Every
seat is not occupied" reads as "no seat is"), coordinated clauses ("A man sings and a woman
dances": negating the first clause alone is not the negation of the whole), adverbs that resist a
negation beside them ("still", "only"), quotations, and negations this module does not undo
("ain't", NPIs like "ever"/"even", "not X but Y"). docs/negation.md lists them with the measured
accuracy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from transnli.generator.realise import inflect, inflections, match_case
from transnli.generator.tagging import TaggedSentence, Token

FINITE_TAGS = frozenset({"MD", "VBZ", "VBP", "VBD"})
SUBJECT_DEPS = frozenset({"nsubj", "nsubjpass", "expl", "csubj", "csubjpass"})
# Dependencies that start a clause of their own: words under them are not in the main clause.
CLAUSE_DEPS = frozenset(
    {"advcl", "relcl", "acl", "ccomp", "csubj", "csubjpass", "parataxis", "conj"}
)
CLAUSE_SEPARATORS = frozenset({";", "--", "—", "–"})
NEGATORS = frozenset({"not", "n't", "n’t"})
# Negative words whose presence in the main clause makes "add not" the wrong negation.
NEGATIVE_WORDS = frozenset(
    {
        "no",
        "nobody",
        "nothing",
        "none",
        "nowhere",
        "neither",
        "nor",
        "noone",
        "never",
        "hardly",
        "scarcely",
        "barely",
        "seldom",
        "rarely",
    }
)
# Clipped stems spaCy leaves before "n't": "can't" = "ca" + "n't", "won't" = "wo" + "n't".
CLIPPED = {"ca": "can", "wo": "will", "sha": "shall"}
MODAL_JOINED = {"can": "cannot"}
# After removing a negation, the negative-polarity items it licensed take their positive form.
NPI_POSITIVE = {
    "any": "some",
    "anything": "something",
    "anyone": "someone",
    "anybody": "somebody",
    "anywhere": "somewhere",
}
NPI_DECLINED = frozenset(
    {"ever", "yet", "either", "even", "help"}
)  # "can't help being" is an idiom
# Quantified subjects whose negation is not "not" on the verb ("Every seat is not occupied" reads
# as "no seat is"; "Most companies do not have X" is not the negation of "most have X").
UNIVERSAL = frozenset(
    {"every", "each", "all", "both", "everyone", "everybody", "everything", "most", "many", "few"}
)
# Auxiliaries that take "not" after them; other verbs spaCy tags AUX ("remained") take do-support.
AUX_LEMMAS = frozenset(
    {
        "be",
        "have",
        "do",
        "will",
        "shall",
        "can",
        "could",
        "may",
        "might",
        "must",
        "should",
        "would",
        "ought",
        "need",
        "dare",
    }
)
CLITIC_AUX = frozenset(
    {"'s", "'re", "'m", "'ve", "'d", "'ll", "’s", "’re", "’m", "’ve", "’d", "’ll"}
)
# Adverbs that resist a negation right next to them ("is not still", "does not still walk").
POSITIVE_POLARITY = frozenset(
    {"still", "already", "sometimes", "somewhat", "now", "soon", "also", "almost"}
)
# Focus words that take a negation's scope wherever they stand ("only the shine was not ...").
FOCUS = frozenset({"only"})
QUOTES = frozenset({'"', "`", "``", "''", "“", "”"})
# "little"/"few" without an article are negative quantifiers ("gave little warning"); "a little" is
# not.
NEGATIVE_QUANTITY = frozenset({"little", "few"})
THIRD_SINGULAR_PRONOUNS = frozenset(
    {
        "he",
        "she",
        "it",
        "this",
        "that",
        "one",
        "someone",
        "somebody",
        "something",
        "everyone",
        "everybody",
        "everything",
        "anyone",
        "anybody",
        "anything",
        "each",
        "who",
        "which",
    }
)

REASONS = (
    "empty",
    "question",
    "several_sentences",
    "no_finite_verb",
    "imperative",
    "never",
    "negative_word",
    "quantified_subject",
    "quotation",
    "coordinated_clauses",
    "polarity_item",
    "no_subject",
    "unhandled_auxiliary",
    "unhandled_negation",
    "npi",
)


@dataclass(frozen=True)
class Edit:
    """One span of the original replaced: text[start:end] -> new."""

    start: int
    end: int
    new: str


@dataclass(frozen=True)
class Negated:
    """The negated sentence and the edit that makes it.

    `word`/`antonym`: the main edit as the triple record describes it ("is" -> "is not", "plays"
    -> "does not play", "not" -> "" when a negation is removed); `char_start`/`char_end`: that
    span in the original; `token`: the token it is anchored on (the verb or auxiliary edited, or
    the removed negator); `kind`: which rule applied (add_not, modal, do_support, remove_not,
    remove_do_support)."""

    text: str
    word: str
    antonym: str
    char_start: int
    char_end: int
    token: Token
    kind: str


@dataclass(frozen=True)
class NegationResult:
    """`status` "ok" with `negated`, or one of REASONS (then `negated` is None)."""

    status: str
    negated: Negated | None = None


def _apply(text: str, edits: Sequence[Edit]) -> str:
    out, pos = [], 0
    for e in sorted(edits, key=lambda e: e.start):
        out.append(text[pos : e.start])
        out.append(e.new)
        pos = e.end
    out.append(text[pos:])
    return "".join(out)


def _end(tok: Token) -> int:
    return tok.idx + len(tok.text)


def _all_caps(word: str) -> bool:
    letters = [c for c in word if c.isalpha()]
    return len(letters) >= 2 and all(c.isupper() for c in letters)


def base_form(verb: Token) -> str:
    """The verb's base form, checked against its inflection: the first lemma that inflects back to
    the word ("rides" -> "ride", where spaCy's small model sometimes gives "rid"), from
    lemminflect's lexicon, then spaCy, then lemminflect's rules; else spaCy's lemma."""
    from lemminflect import getAllLemmas, getAllLemmasOOV

    low = verb.text.lower()
    if verb.tag in ("VB", "VBP"):
        return low  # the base form itself ("play", "I play")
    spacy_lemma = (verb.lemma or verb.text).lower()
    # lemminflect's lexicon first (it knows "fuzzed" is fuzz + ed, where spaCy says "fuzze").
    candidates = [
        *getAllLemmas(low).get("VERB", ()),
        spacy_lemma,
        *getAllLemmasOOV(low, "VERB").get("VERB", ()),
    ]
    for lemma in candidates:
        if low in (
            f.lower()
            for f in inflections(lemma, verb.tag, False) + inflections(lemma, verb.tag, True)
        ):
            return lemma
    return spacy_lemma


class _Parse:
    """Navigation over one tagged sentence's dependency tree."""

    def __init__(self, sentence: TaggedSentence):
        self.s = sentence
        self.toks = sentence.tokens
        self.children: dict[int, list[Token]] = {t.i: [] for t in self.toks}
        for t in self.toks:
            if t.head != t.i and t.head in self.children:
                self.children[t.head].append(t)

    def kids(self, tok: Token, *deps: str) -> list[Token]:
        return [c for c in self.children[tok.i] if not deps or c.dep in deps]

    def in_main_clause(self, tok: Token, root: Token) -> bool:
        """True when the path from `tok` up to the root crosses no clause boundary."""
        cur, seen = tok, set()
        while cur.i != root.i and cur.i not in seen:
            seen.add(cur.i)
            if cur.dep in CLAUSE_DEPS:
                return False
            cur = self.toks[cur.head]
        return cur.i == root.i

    def subject(self, verb: Token) -> Token | None:
        subs = self.kids(verb, *SUBJECT_DEPS)
        return subs[0] if subs else None


def _third_singular(parse: _Parse, subject: Token | None) -> bool:
    if subject is None:
        return False
    if parse.kids(subject, "conj"):
        return False  # "a man and a woman"
    low = subject.text.lower()
    if subject.pos == "PRON" or subject.tag in ("PRP", "WP", "DT", "EX"):
        return low in THIRD_SINGULAR_PRONOUNS
    return subject.tag in ("NN", "NNP")


class Negator:
    """The negation stage: `negate` for one tagged sentence, `negate_many` for a batch."""

    version = "negation-1"

    def negate_many(self, sentences: Sequence[TaggedSentence]) -> list[NegationResult]:
        return [self.negate(s) for s in sentences]

    def negate(self, sentence: TaggedSentence) -> NegationResult:
        toks = sentence.tokens
        words = [t for t in toks if t.pos not in ("PUNCT", "SPACE")]
        if not words:
            return NegationResult("empty")
        if sentence.text.rstrip().endswith("?") or words[0].tag in ("WRB", "WP", "WDT"):
            return NegationResult("question")  # also "how silly he can be" (an exclamative)
        roots = [t for t in toks if t.dep == "ROOT" or t.head == t.i]
        if len([r for r in roots if r.pos not in ("PUNCT", "SPACE")]) != 1:
            return NegationResult("several_sentences")
        parse = _Parse(sentence)
        root = next(r for r in roots if r.pos not in ("PUNCT", "SPACE"))
        if root.pos not in ("VERB", "AUX"):
            return NegationResult("no_finite_verb")

        auxes = sorted(
            (c for c in parse.kids(root, "aux", "auxpass") if c.i < root.i and c.tag != "TO"),
            key=lambda t: t.i,
        )
        subject = parse.subject(root)
        if subject is not None and auxes and subject.i > auxes[0].i:
            return NegationResult("question")  # subject-auxiliary inversion without a "?"
        negs = [
            c for c in parse.kids(root, "neg") + [n for a in auxes for n in parse.kids(a, "neg")]
        ]
        problem = self._problem(parse, root, subject, negs)
        if problem is not None:
            return NegationResult(problem)
        finite = auxes[0] if auxes else root
        if subject is None:
            # Imperatives, and fragments whose finite-looking verb is often a participle
            # ("brought to you live from ..."): an NLI hypothesis has a subject.
            return NegationResult("imperative" if finite.tag == "VB" else "no_subject")
        if finite.tag not in FINITE_TAGS and not (finite is root and root.tag == "VB"):
            return NegationResult("no_finite_verb")

        negators = [n for n in negs if n.text.lower() in NEGATORS]
        if negs and not negators:
            return NegationResult("unhandled_negation")
        if negators:
            return self._remove(sentence, parse, root, auxes, negators[0])
        after = parse.toks[finite.i + 1] if finite.i + 1 < len(parse.toks) else None
        before = parse.toks[root.i - 1] if finite is root and root.i > 0 else None
        if any(
            t is not None and t.text.lower() in POSITIVE_POLARITY and t.pos == "ADV"
            for t in (after, before)
        ) or any(t.text.lower() in FOCUS and parse.in_main_clause(t, root) for t in toks):
            return NegationResult("polarity_item")  # "is still" -> "is not still", "still walks"
        is_aux = (
            finite.tag == "MD"
            or finite.lemma.lower() in AUX_LEMMAS
            or finite.text.lower() in CLITIC_AUX
        )
        if finite is not root:
            if is_aux:
                return self._add_not(sentence, finite)
            if finite.tag in ("VBZ", "VBD", "VBP"):  # "got arrested", "remained collected"
                return self._do_support(sentence, parse, finite, subject)
            return NegationResult("unhandled_auxiliary")
        # The main verb itself: a copula takes "not" ("is not tall"), so does a bare auxiliary
        # ("He does." -> "He does not."); a lexical verb, "have" with an object included, takes
        # do-support ("has a dog" -> "does not have a dog").
        if root.lemma.lower() == "be" or (
            is_aux and root.pos == "AUX" and not parse.kids(root, "dobj")
        ):
            return self._add_not(sentence, finite)
        return self._do_support(sentence, parse, root, subject)

    @staticmethod
    def _problem(
        parse: _Parse, root: Token, subject: Token | None, negs: list[Token]
    ) -> str | None:
        """Why the main clause has no clean negation by one edit (a REASONS entry), or None."""
        if any(n.text.lower() == "never" for n in negs):
            return "never"
        for t in parse.toks:
            low = t.text.lower()
            negative = low in NEGATIVE_WORDS or (
                low in NEGATIVE_QUANTITY
                and t.pos != "PROPN"
                and (
                    t.i == 0
                    or parse.toks[t.i - 1].text.lower()
                    not in ("a", "an", "the", "very", "so", "too")
                )
            )
            if negative and t not in negs and parse.in_main_clause(t, root):
                return "negative_word"
        if any(t.text in QUOTES for t in parse.toks):
            return "quotation"  # quoted sentences parse as anything but quotes
        if (
            parse.kids(root, "parataxis")
            or any(t.text in CLAUSE_SEPARATORS for t in parse.toks)
            or any(c.i < root.i for c in parse.kids(root, "ccomp"))
            or any(
                c.i < root.i and c.tag in ("VB", "VBP") and not parse.kids(c, "mark", *SUBJECT_DEPS)
                for c in parse.kids(root, "advcl")
            )
        ):  # "don't drill here, there's a gas pipe"
            # "the tying is an art; the untying is easy": which clause is the main one is a guess.
            return "coordinated_clauses"
        if any(c.text.lower() in ("but", "yet") for c in parse.kids(root, "cc")):
            return "coordinated_clauses"  # "looked meek but had the heart of a lion"
        for conj in parse.kids(root, "conj"):
            # A coordinated clause with its own subject, auxiliary or negation is not under the
            # main clause's negation ("is tied up and can't see you").
            if conj.pos in ("VERB", "AUX") and (
                parse.subject(conj) is not None or parse.kids(conj, "aux", "auxpass", "neg")
            ):
                return "coordinated_clauses"

        if subject is not None and (
            subject.text.lower() in UNIVERSAL
            or any(
                d.text.lower() in UNIVERSAL
                for d in parse.kids(subject, "det", "predet", "nmod", "quantmod", "amod")
            )
        ):
            # "Every seat is occupied" -> "Every seat is not occupied" reads as "no seat is": the
            # negation of a universal takes "not every", which is not a main-clause edit.
            return "quantified_subject"
        return None

    # -- adding a negation ------------------------------------------------------------------------
    def _add_not(self, sentence: TaggedSentence, aux: Token) -> NegationResult:
        low = aux.text.lower()
        if low in MODAL_JOINED:  # "can" -> "cannot", in the auxiliary's case
            new = match_case(MODAL_JOINED[low], aux.text)
        else:
            new = aux.text + " " + ("NOT" if _all_caps(aux.text) else "not")
        kind = "modal" if aux.tag == "MD" else "add_not"
        text = _apply(sentence.text, [Edit(aux.idx, _end(aux), new)])
        return NegationResult("ok", Negated(text, aux.text, new, aux.idx, _end(aux), aux, kind))

    def _do_support(
        self, sentence: TaggedSentence, parse: _Parse, root: Token, subject: Token | None
    ) -> NegationResult:
        toks, text = parse.toks, sentence.text
        if root.tag == "VBD":
            do = "did"
        elif root.tag == "VBZ":
            do = "does"
        elif root.tag == "VBP":
            do = "do"
        else:  # a base form with a subject: person from the subject
            do = "does" if _third_singular(parse, subject) else "do"
        lemma = base_form(root)
        if not lemma.isalpha():
            return NegationResult("no_finite_verb")
        # A hyphenated verb ("baby-sit") is several tokens written together: all of it follows
        # "not".
        first = root.i
        while (
            first >= 2
            and toks[first - 1].text == "-"
            and not toks[first - 1].whitespace
            and not toks[first - 2].whitespace
        ):
            first -= 2
        start = toks[first].idx
        verb = text[start : root.idx] + lemma
        # An adverb right before the verb ("always plays") goes inside the negation's scope:
        # "does not always play".
        prev = toks[first - 1] if first > 0 else None
        if (
            prev is not None
            and prev.head == root.i
            and prev.dep == "advmod"
            and prev.pos == "ADV"
            and (subject is None or prev.i > subject.i)
        ):
            verb = text[prev.idx : start] + verb
            start = prev.idx
        caps = _all_caps(root.text)
        new = f"{do} not {verb}"
        if caps:
            new = new.upper()
        elif text[start : start + 1].isupper():  # the capital moves to the inserted word
            new = new[:1].upper() + new[1:]
            verb_cased = text[start : _end(root)]
            new = new[: len(new) - len(verb)] + verb_cased[:1].lower() + verb[1:]
        edits = [Edit(start, _end(root), new)]
        # Verbs coordinated with the main verb share its subject and its do-support:
        # "sits and reads" -> "does not sit and read".
        for conj in parse.kids(root, "conj"):
            if conj.pos == "VERB" and conj.tag in ("VBZ", "VBD", "VBP"):
                base = base_form(conj)
                if base.isalpha():
                    edits.append(
                        Edit(conj.idx, _end(conj), base.upper() if _all_caps(conj.text) else base)
                    )
        word = text[start : _end(root)]
        return NegationResult(
            "ok", Negated(_apply(text, edits), word, new, start, _end(root), root, "do_support")
        )

    # -- removing a negation ----------------------------------------------------------------------
    def _remove(
        self, sentence: TaggedSentence, parse: _Parse, root: Token, auxes: list[Token], neg: Token
    ) -> NegationResult:
        toks, text = parse.toks, sentence.text
        for t in toks:
            low = t.text.lower()
            if low in NPI_DECLINED and parse.in_main_clause(t, root) and t.i > neg.i:
                return NegationResult("npi")
            if low == "but" and t.i > neg.i:
                return NegationResult("unhandled_negation")  # "not the typing but the earphones"
        prev = toks[neg.i - 1] if neg.i > 0 else None
        if prev is None or prev not in auxes and prev is not root:
            return NegationResult("unhandled_negation")  # "not" away from its auxiliary
        if prev.text.lower() == "ai":
            return NegationResult("unhandled_negation")  # "ain't": no single positive form
        npi_edits = [
            Edit(t.idx, _end(t), match_case(NPI_POSITIVE[t.text.lower()], t.text))
            for t in toks
            if t.text.lower() in NPI_POSITIVE and t.i > neg.i and parse.in_main_clause(t, root)
        ]
        fused = prev.whitespace == ""  # "isn't", "cannot", "can't"

        # The verb "do" supported: the next auxiliary ("did not get arrested") or the main verb.
        verb = next((a for a in auxes if a.i > neg.i), root)
        if (
            prev.lemma == "do"
            and prev is not root
            and verb.i > neg.i
            and (verb is not root or root.pos == "VERB")
        ):
            tag = {"VBD": "VBD", "VBZ": "VBZ"}.get(prev.tag, "VBP")
            lemma = verb.text.lower() if verb.tag == "VB" else base_form(verb)
            form = lemma if tag == "VBP" else inflect(lemma, tag, "v")
            if prev.text[:1].isupper():
                form = match_case(form, prev.text)
            # "does not play" / "doesn't play" -> "plays"; words between (adverbs) are kept:
            # "does not always play" -> "always plays".
            new = text[_end(neg) : verb.idx].lstrip() + form
            edits = [Edit(prev.idx, _end(verb), new), *npi_edits]
            return NegationResult(
                "ok",
                Negated(
                    _apply(text, edits),
                    text[prev.idx : _end(verb)],
                    new,
                    prev.idx,
                    _end(verb),
                    verb,
                    "remove_do_support",
                ),
            )

        low = prev.text.lower()
        if fused and low in CLIPPED:  # "can't" -> "can", "won't" -> "will"
            new = match_case(CLIPPED[low], prev.text)
            edits = [Edit(prev.idx, _end(neg), new), *npi_edits]
            word = text[prev.idx : _end(neg)]
            return NegationResult(
                "ok",
                Negated(_apply(text, edits), word, new, prev.idx, _end(neg), neg, "remove_not"),
            )
        # "is not" -> "is", "isn't" -> "is", "cannot" -> "can": the negator and the space before it.
        edits = [Edit(_end(prev), _end(neg), ""), *npi_edits]
        return NegationResult(
            "ok", Negated(_apply(text, edits), neg.text, "", neg.idx, _end(neg), neg, "remove_not")
        )
