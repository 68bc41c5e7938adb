"""Human review of a generation run (`transnli review RUN`): a local page to judge triples by
keyboard, the judgements log (RUN/review.jsonl), agreement between annotators, and exports that
keep only the triples judged good or carry the judgement as a column.

Layering (docs/design.md): this package reads the generator's run folder and records; it imports
nothing from the evaluator, and the generator imports nothing from it.
"""
