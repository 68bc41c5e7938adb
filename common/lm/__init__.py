"""The causal language model that scores sentences, one job a module:

- `settings`: what a caller chooses (`LMSettings`, `DEFAULT_LM`, `DTYPES`) and the one error
  (`LMError`);
- `readings`: what a read gives (`TokenScores`, `PairScore`, and the hidden states `SideStates`,
  `PairReading`), rounded to `ROUND_DIGITS`;
- `model_folder`: a model folder's files, its identity (`model_digest`), whether a conversion is
  whole (`conversion_problem`), and the checks that what loads is a causal LM with its tokenizer;
- `conversion`: where the weights come from (`resolve_model_folder`): the packaged Gemma
  assembled, a GGUF converted once into transnli's cache;
- `scorer`: `CausalLMScorer`, which loads the model and reads sentences and pairs in batches;
- `output_layer`: the output layer reduced to the log-probabilities scoring needs;
- `memory`: keeping the weights' pages and the tokenizer's build tables out of resident memory;
- `score_cache`: the scores kept on disk (SQLite), keyed by the model's identity.

A new kind of model (a spec `LMSettings.spec` names) goes into `conversion.resolve_model_folder`;
what it must hold, into `model_folder`. Importers name the module they need; the names below are
the package's face, for a caller that only scores.
"""

from transnli.common.lm.readings import PairScore, TokenScores
from transnli.common.lm.scorer import CausalLMScorer
from transnli.common.lm.settings import DEFAULT_LM, LMError, LMSettings

__all__ = ["DEFAULT_LM", "CausalLMScorer", "LMError", "LMSettings", "PairScore", "TokenScores"]
