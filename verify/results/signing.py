"""Authenticating records: `--reuse` takes only records verify itself made on this machine.

A results file is plain JSON anyone can edit: a FAIL changed to `pass` by hand, or a file copied
from another machine's CI job, would otherwise be reused as a verdict verify never reached here.
So every record a run makes carries an authentication tag (CheckResult.auth_tag): HMAC-SHA256,
keyed by 32 random bytes kept in verify's cache folder (KEY_FILE, made with mode 0600 on first
use), over the record's inputs digest, its verdict and the rest of what a reuse copies (every
field but the job's position in its run, where a reuse came from, and the tag itself). A reuse
copies the tag with the record, so a reused record stays reusable.

Who can make a record reusable: whoever can read the key, i.e. this user (and root) on this
machine; verify tags only the records its own runs make. A record edited in any field the tag
covers, or tagged with another machine's key, does not verify and runs again; so does every record
when the key is missing or replaced (a key that is not this user's own private regular file is
replaced).

The tag lives in results.json as an optional record field, so a results file moved or copied on
the same machine keeps its records reusable; readers that do not know the field skip it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import stat
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from verify.errors import UsageError
from verify.results.record import CheckResult

#: The key's file in verify's cache folder.
KEY_FILE = "reuse-key"
#: The key's length: HMAC-SHA256's block is 64 bytes; 32 random bytes are its full strength.
KEY_BYTES = 32
#: Fields a reuse rewrites (verify.results.reuse.reused) or that hold the tag: not covered by it.
UNCOVERED = ("job_id", "reused_from", "auth_tag")
#: A link where the key should be is not followed (it could point at a file others can write).
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
#: Says what the tagged bytes are, so a tag made for anything else never verifies as a record's.
_DOMAIN = b"verify.record-tag/1\0"


@dataclass(frozen=True)
class SigningKey:
    """The key, or why there is none (a cache folder that cannot be written)."""

    secret: bytes | None
    problem: str = ""


@dataclass(frozen=True)
class Authentication:
    """Whether a record's tag verifies, and if not, why (one phrase for the run's message)."""

    authentic: bool
    why: str = ""


def key_path() -> Path:
    from verify._cache import cache_dir

    return cache_dir() / KEY_FILE


def signing_key() -> SigningKey:
    """This machine's key, read once per process per cache folder; made if missing or unfit."""
    return _key_at(str(key_path()))


def forget_key() -> None:
    """Read the key again on next use (tests; a process that outlives a change of $VERIFY_CACHE)."""
    _key_at.cache_clear()


def key_problem() -> str:
    """Why there is no key ("" when there is one)."""
    return signing_key().problem


@lru_cache(maxsize=4)
def _key_at(where: str) -> SigningKey:
    path = Path(where)
    found = _read_key(path)
    if isinstance(found, bytes):
        return SigningKey(found)
    return _make_key(path, replace_existing=found != "missing")


def _read_key(path: Path) -> bytes | str:
    """The key, or "missing", or "unfit": not a regular file of KEY_BYTES that this user owns
    and no one else may read or write (a key others can read lets them forge tags). Opened
    without following a link and without blocking (a FIFO put there answers at once)."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return "missing"
    except OSError:
        return "unfit"
    try:
        info = os.fstat(fd)
        owner = os.geteuid() if hasattr(os, "geteuid") else info.st_uid
        private = stat.S_ISREG(info.st_mode) and info.st_uid == owner and not info.st_mode & 0o077
        if not private or info.st_size != KEY_BYTES:
            return "unfit"
        secret = os.read(fd, KEY_BYTES + 1)
    except OSError:
        return "unfit"
    finally:
        os.close(fd)
    return secret if len(secret) == KEY_BYTES else "unfit"


def _make_key(path: Path, *, replace_existing: bool) -> SigningKey:
    """A new random key written to `path` with mode 0600. Where another process made one first
    (two runs starting at once), theirs is used, so both sign alike."""
    secret = os.urandom(KEY_BYTES)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), 0o600)
            handle.write(secret)
            handle.flush()
            os.fsync(handle.fileno())
        if replace_existing:
            os.replace(temporary, path)
        else:
            try:
                os.link(temporary, path)  # fails where another process made the key meanwhile
            except FileExistsError:
                theirs = _read_key(path)
                if isinstance(theirs, bytes):
                    return SigningKey(theirs)
                os.replace(temporary, path)
            except OSError:  # a file system without hard links: the rename is atomic still
                os.replace(temporary, path)
    except OSError as exc:
        return SigningKey(None, f"cannot make {path}: {exc.strerror or exc}")
    finally:
        try:
            os.unlink(temporary)
        except OSError:
            pass
    return SigningKey(secret)


def _message(record: CheckResult) -> bytes | None:
    """The bytes a tag covers: the inputs digest, the verdict and the record's content as a reuse
    copies it, in canonical JSON. The content is the record as a results file gives it back
    (written and read once), so the writer's record and the reader's tag the same bytes."""
    try:
        content = CheckResult.from_dict(record.to_dict()).to_dict()
    except UsageError:  # a record that would not read back: it cannot be reused anyway
        return None
    for name in UNCOVERED:
        content.pop(name, None)
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return b"".join((_DOMAIN, (record.inputs_sha256 or "").encode(), b"\0", record.verdict.value.encode(), b"\0",
                     text.encode()))


def tag(record: CheckResult, secret: bytes) -> str | None:
    """The record's tag under `secret` (hex), or None for a record that cannot be tagged."""
    message = _message(record)
    return None if message is None else hmac.new(secret, message, hashlib.sha256).hexdigest()


def signed(record: CheckResult) -> CheckResult:
    """`record` with its tag, made with this machine's key. Only records with an inputs digest are
    tagged (no other can be reused); without a key, the record is left untagged."""
    key = signing_key()
    if record.inputs_sha256 is None or key.secret is None:
        return record
    found = tag(record, key.secret)
    return record if found is None else replace(record, auth_tag=found)


def verify_tag(record: CheckResult) -> Authentication:
    """Whether `record`'s tag is this machine's key's tag of its present content."""
    key = signing_key()
    if key.secret is None:
        return Authentication(False, "no key")
    if not record.auth_tag:
        return Authentication(False, "untagged")
    expected = tag(record, key.secret)
    if expected is None or not hmac.compare_digest(expected, record.auth_tag):
        return Authentication(False, "mismatch")
    return Authentication(True)
