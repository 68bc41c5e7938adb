"""transnli evaluator: labels triples with NLI models and measures transitive consistency."""
