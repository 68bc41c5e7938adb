"""Code that the generator and the evaluator both use and that belongs to neither: the
language-model scorer (`transnli.common.lm`), file digests, distribution versions, the Hugging
Face Hub transport of `transnli publish` (`transnli.common.hub`) and the citations of its cards
(`transnli.common.citation`). It imports nothing from generator/ or evaluator/."""
