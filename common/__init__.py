"""Code that the generator and the evaluator both use and that belongs to neither: today the
language-model scorer (`transnli.common.lm`). It imports nothing from generator/ or evaluator/."""
