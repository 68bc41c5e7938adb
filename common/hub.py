"""The Hugging Face Hub transport shared by `transnli publish` of a generation run (the triples
dataset) and of an evaluation folder (its results): the repo id check, the token, and the upload
of a prepared folder to a dataset repository with huggingface_hub's `HfApi`.

What goes into the folder (a dataset card and its files) is each side's business; this module only
moves a folder to the Hub and turns the client's failures into one clear line.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path

REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")
TOKENS_URL = "https://huggingface.co/settings/tokens"


class HubError(RuntimeError):
    """A publish that cannot go ahead or that the Hub refused; the message says why and what to
    do."""


def check_repo_id(repo_id: str, option: str = "--repo-id") -> str:
    if not REPO_ID.match(repo_id):
        raise HubError(f"{option} {repo_id!r} is not of the form USER/NAME")
    return repo_id


def hub_token(token_env: str | None = None) -> str:
    """The Hub token. With `token_env` named: that environment variable only, never another one
    (an error when it is unset or empty). With none named: huggingface_hub's own lookup
    (`get_token`: HF_TOKEN, else the token `hf auth login` saved)."""
    if token_env:
        value = os.environ.get(token_env)
        if value is None or not value.strip():
            state = "is not set" if value is None else "is empty"
            raise HubError(
                f"--token-env {token_env}: the environment variable {token_env} {state}; set it "
                f"to a token with write access (from {TOKENS_URL}), or leave --token-env out to "
                "use HF_TOKEN or the token `hf auth login` saved"
            )
        return value.strip()
    from huggingface_hub import get_token

    token = get_token()
    if not token:
        raise HubError(
            f"no Hugging Face token: set HF_TOKEN (a token with write access, from {TOKENS_URL}), "
            "name another variable with --token-env, or run `hf auth login`"
        )
    return token


def upload_folder(
    folder: Path,
    repo_id: str,
    *,
    token: str,
    commit_message: str,
    private: bool = False,
    delete_patterns: Sequence[str] | None = None,
    retry_hint: str,
    api=None,
) -> str:
    """Create the dataset repo `repo_id` when missing and upload `folder` to it in one commit;
    returns the repo's URL. Files the repo already holds unchanged are not sent again (the Hub
    skips an empty commit), and remote files matching `delete_patterns` that `folder` no longer
    has are deleted. `retry_hint` ends the message when the Hub cannot be reached."""
    if api is None:
        from huggingface_hub import HfApi

        api = HfApi()
    from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled

    extra = {"delete_patterns": list(delete_patterns)} if delete_patterns else {}
    try:
        url = api.create_repo(
            repo_id, repo_type="dataset", private=private, exist_ok=True, token=token
        )
        api.upload_folder(
            folder_path=str(folder),
            repo_id=repo_id,
            repo_type="dataset",
            token=token,
            commit_message=commit_message,
            **extra,
        )
    except OfflineModeIsEnabled as e:
        raise HubError(
            f"cannot publish: the Hugging Face Hub is switched off here (HF_HUB_OFFLINE is set): "
            f"{e}"
        ) from e
    except HfHubHTTPError as e:
        raise HubError(
            f"the Hugging Face Hub refused the upload to {repo_id}: {str(e).splitlines()[0]}"
        ) from e
    except network_errors() as e:
        raise HubError(
            f"cannot reach the Hugging Face Hub ({type(e).__name__}: {e}); check the network, "
            f"or {retry_hint}"
        ) from e
    return str(url) if url else f"https://huggingface.co/datasets/{repo_id}"


def network_errors() -> tuple[type[BaseException], ...]:
    """The exceptions a failed connection raises, whichever HTTP library huggingface_hub uses."""
    found: list[type[BaseException]] = [OSError]
    for module, name in (
        ("httpx", "TransportError"),
        ("httpx2", "TransportError"),
        ("requests", "RequestException"),
    ):
        with suppress(ImportError, AttributeError):
            found.append(getattr(importlib.import_module(module), name))
    return tuple(found)
