"""Code that the generator and the evaluator both use and that belongs to neither: the
language-model scorer (`transnli.common.lm`, a package: settings, model folders and conversion, the
scorer, its score cache), the LLM clients and their reply cache (`transnli.common.llm`), file
digests (`digest`), distribution versions, the Hugging Face Hub transport of `transnli publish`
(`hub`) and the citations of its cards (`citation`), torch's device choice (`devices`), and what a
folder written by one run at a time needs (`folder`: its lock, durable renames, one line for a full
disk). It imports nothing from generator/ or evaluator/."""
