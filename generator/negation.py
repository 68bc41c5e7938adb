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

Sentences with no clean negation are declined with a counted reason rather than negated badly:
no finite verb in the main clause ("A man playing guitar."), imperatives, questions, several
sentences, a main clause with "never" or a negative quantifier ("No one is here": its negation is
not a matter of adding "not"), coordinated clauses with subjects of their own ("A man sings and a
woman dances": negating the first clause alone is not the negation of the whole), and negation
forms this module does not undo ("ain't", NPIs like "ever"/"yet").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from transnli.generator.realise import inflect, match_case
from transnli.generator.tagging import TaggedSentence, Token

FINITE_TAGS = frozenset({"MD", "VBZ", "VBP", "VBD"})
SUBJECT_DEPS = frozenset({"nsubj", "nsubjpass", "expl", "csubj", "csubjpass"})
# Dependencies that start a clause of their own: words under them are not in the main clause.
CLAUSE_DEPS = frozenset({"advcl", "relcl", "acl", "ccomp", "csubj", "csubjpass", "parataxis", "conj"})
NEGATORS = frozenset({"not", "n't", "n’t"})
# Negative words whose presence in the main clause makes "add not" the wrong negation.
NEGATIVE_WORDS = frozenset({"no", "nobody", "nothing", "none", "nowhere", "neither", "nor", "noone",
                            "never", "hardly", "scarcely", "barely", "seldom", "rarely"})
# Clipped stems spaCy leaves before "n't": "can't" = "ca" + "n't", "won't" = "wo" + "n't".
CLIPPED = {"ca": "can", "wo": "will", "sha": "shall"}
MODAL_JOINED = {"can": "cannot"}
# After removing a negation, the negative-polarity items it licensed take their positive form.
NPI_POSITIVE = {"any": "some", "anything": "something", "anyone": "someone", "anybody": "somebody",
                "anywhere": "somewhere"}
NPI_DECLINED = frozenset({"ever", "yet", "either", "at all"})
THIRD_SINGULAR_PRONOUNS = frozenset({
    "he", "she", "it", "this", "that", "one", "someone", "somebody", "something", "everyone",
    "everybody", "everything", "anyone", "anybody", "anything", "each", "who", "which",
})

REASONS = (
    "empty", "question", "several_sentences", "no_finite_verb", "imperative", "never",
    "negative_word", "coordinated_clauses", "unhandled_negation", "npi",
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
        out.append(text[pos:e.start])
        out.append(e.new)
        pos = e.end
    out.append(text[pos:])
    return "".join(out)


def _end(tok: Token) -> int:
    return tok.idx + len(tok.text)


def _case(word: str, like: str) -> str:
    """`word` in the case of `like`: ALL CAPS copied, Title copied, else as written."""
    return match_case(word, like)


def _lower_or_upper(word: str, like: str) -> str:
    """For a word added after another ("not" after "Is"): upper only when `like` is ALL CAPS."""
    letters = [c for c in like if c.isalpha()]
    return word.upper() if len(letters) >= 2 and all(c.isupper() for c in letters) else word


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
        if sentence.text.rstrip().endswith("?"):
            return NegationResult("question")
        roots = [t for t in toks if t.dep == "ROOT" or t.head == t.i]
        if len([r for r in roots if r.pos not in ("PUNCT", "SPACE")]) != 1:
            return NegationResult("several_sentences")
        parse = _Parse(sentence)
        root = next(r for r in roots if r.pos not in ("PUNCT", "SPACE"))
        if root.pos not in ("VERB", "AUX"):
            return NegationResult("no_finite_verb")

        auxes = sorted((c for c in parse.kids(root, "aux", "auxpass") if c.i < root.i and c.tag != "TO"),
                       key=lambda t: t.i)
        subject = parse.subject(root)
        if subject is not None and auxes and subject.i > auxes[0].i:
            return NegationResult("question")  # subject-auxiliary inversion without a "?"
        negs = [c for c in parse.kids(root, "neg") + [n for a in auxes for n in parse.kids(a, "neg")]]
        if any(n.text.lower() == "never" for n in negs):
            return NegationResult("never")
        for t in toks:
            if t.text.lower() in NEGATIVE_WORDS and t not in negs and parse.in_main_clause(t, root):
                return NegationResult("negative_word")
        for conj in parse.kids(root, "conj"):
            if conj.pos in ("VERB", "AUX") and parse.subject(conj) is not None:
                return NegationResult("coordinated_clauses")

        finite = auxes[0] if auxes else root
        if finite.tag not in FINITE_TAGS and not (finite is root and root.tag == "VB" and subject is not None):
            if subject is None and finite.tag == "VB":
                return NegationResult("imperative")
            return NegationResult("no_finite_verb")
        if subject is None and finite.tag == "VB":
            return NegationResult("imperative")

        negators = [n for n in negs if n.text.lower() in NEGATORS]
        if negs and not negators:
            return NegationResult("unhandled_negation")
        if negators:
            return self._remove(sentence, parse, root, auxes, negators[0])
        if auxes or root.pos == "AUX" or root.lemma == "be":
            return self._add_not(sentence, finite)
        return self._do_support(sentence, parse, root, subject)

    # -- adding a negation ------------------------------------------------------------------------
    def _add_not(self, sentence: TaggedSentence, aux: Token) -> NegationResult:
        low = aux.text.lower()
        if low in MODAL_JOINED:
            new = _case(MODAL_JOINED[low], aux.text) if aux.text[:1].isupper() or aux.text.isupper() \
                else MODAL_JOINED[low]
            if aux.text.isupper() and len(aux.text) > 1:
                new = new.upper()
            kind = "modal"
        else:
            new = aux.text + " " + _lower_or_upper("not", aux.text)
            kind = "modal" if aux.tag == "MD" else "add_not"
        text = _apply(sentence.text, [Edit(aux.idx, _end(aux), new)])
        return NegationResult("ok", Negated(text, aux.text, new, aux.idx, _end(aux), aux, kind))

    def _do_support(self, sentence: TaggedSentence, parse: _Parse, root: Token,
                    subject: Token | None) -> NegationResult:
        if root.tag == "VBD":
            do = "did"
        elif root.tag == "VBZ":
            do = "does"
        elif root.tag == "VBP":
            do = "do"
        else:  # a base form with a subject: person from the subject
            do = "does" if _third_singular(parse, subject) else "do"
        lemma = (root.lemma or root.text).lower()
        if not lemma.isalpha():
            return NegationResult("no_finite_verb")
        # An adverb right before the verb ("always plays") goes inside the negation's scope.
        start_tok = root
        prev = parse.toks[root.i - 1] if root.i > 0 else None
        if prev is not None and prev.head == root.i and prev.dep == "advmod" and prev.pos == "ADV" \
                and (subject is None or prev.i > subject.i):
            start_tok = prev
        aux_words = f"{do} {_lower_or_upper('not', root.text)}"
        if root.text.isupper() and len(root.text) > 1:
            aux_words, lemma = aux_words.upper(), lemma.upper()
        elif start_tok.text[:1].isupper():
            aux_words = aux_words[:1].upper() + aux_words[1:]
            if start_tok is root:
                pass  # the capital moved to "Does"; the verb itself is lower case
        if start_tok is root:
            verb_new = f"{aux_words} {lemma}"
        else:
            between = sentence.text[start_tok.idx:root.idx]
            first = start_tok.text if not start_tok.text[:1].isupper() else start_tok.text.lower()
            verb_new = f"{aux_words} {first}{between[len(start_tok.text):]}{lemma}"
        edits = [Edit(start_tok.idx, _end(root), verb_new)]
        # Verbs coordinated with the main verb share its subject and its do-support.
        for conj in parse.kids(root, "conj"):
            if conj.pos == "VERB" and conj.tag in ("VBZ", "VBD", "VBP") and conj.lemma.isalpha():
                edits.append(Edit(conj.idx, _end(conj), _case(conj.lemma.lower(), conj.text)
                                  if conj.text[:1].isupper() else conj.lemma.lower()))
        text = _apply(sentence.text, edits)
        word = sentence.text[start_tok.idx:_end(root)]
        return NegationResult("ok", Negated(text, word, verb_new, start_tok.idx, _end(root), root, "do_support"))

    # -- removing a negation ----------------------------------------------------------------------
    def _remove(self, sentence: TaggedSentence, parse: _Parse, root: Token, auxes: list[Token],
                neg: Token) -> NegationResult:
        toks, text = parse.toks, sentence.text
        for t in toks:
            low = t.text.lower()
            if low in NPI_DECLINED and parse.in_main_clause(t, root) and t.i > neg.i:
                return NegationResult("npi")
        prev = toks[neg.i - 1] if neg.i > 0 else None
        if prev is None or prev not in auxes and prev is not root:
            return NegationResult("unhandled_negation")  # "not" away from its auxiliary
        if prev.text.lower() == "ai":
            return NegationResult("unhandled_negation")  # "ain't": no single positive form
        npi_edits = [Edit(t.idx, _end(t), _case(NPI_POSITIVE[t.text.lower()], t.text))
                     for t in toks if t.text.lower() in NPI_POSITIVE and t.i > neg.i
                     and parse.in_main_clause(t, root)]
        fused = prev.whitespace == ""  # "isn't", "cannot", "can't"

        do_support = prev.lemma == "do" and prev is not root and root.pos == "VERB" and root.i > neg.i
        if do_support:
            tag = {"VBD": "VBD", "VBZ": "VBZ"}.get(prev.tag, "VBP")
            lemma = (root.lemma or root.text).lower()
            form = lemma if tag == "VBP" else inflect(lemma, tag, "v")
            if prev.text[:1].isupper():
                form = _case(form, prev.text)
            if not neg.whitespace and _end(neg) != root.idx:
                return NegationResult("unhandled_negation")
            # "does not play" / "doesn't play" -> "plays"; words between (adverbs) are kept:
            # "does not always play" -> "always plays".
            between = text[_end(neg):root.idx].lstrip()
            new = between + form
            edits = [Edit(prev.idx, _end(root), new), *npi_edits]
            return NegationResult("ok", Negated(_apply(text, edits), text[prev.idx:_end(root)], new,
                                                prev.idx, _end(root), root, "remove_do_support"))

        low = prev.text.lower()
        if fused and low in CLIPPED:  # "can't" -> "can", "won't" -> "will"
            new = _case(CLIPPED[low], prev.text)
            edits = [Edit(prev.idx, _end(neg), new), *npi_edits]
            word = text[prev.idx:_end(neg)]
            return NegationResult("ok", Negated(_apply(text, edits), word, new, prev.idx, _end(neg), neg,
                                                "remove_not"))
        # "is not" -> "is", "isn't" -> "is", "cannot" -> "can": the negator and the space before it.
        edits = [Edit(_end(prev), _end(neg), ""), *npi_edits]
        return NegationResult("ok", Negated(_apply(text, edits), neg.text, "", neg.idx, _end(neg), neg,
                                            "remove_not"))
