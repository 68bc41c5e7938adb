"""transnli generator: NLI pairs to (premise, hypothesis, modified hypothesis) triples."""
