"""Code that the generator and the evaluator both use and that belongs to neither: the
language-model scorer (`transnli.common.lm`), file digests (`digest`) and what a folder written by
one run at a time needs (`folder`: its lock, durable renames, one line for a full disk). It
imports nothing from generator/ or evaluator/."""
