"""Reviewed-safe: which read-only commands need no consent beyond their paths; domain layer.

A parsed command is reviewed-safe when it neither writes through a redirection nor runs in the
background, and every simple command starts with a reviewed-safe phrase (compared word for word,
the command name included: `/bin/ls` is not `ls`) without an option below:

- options that write files or run programs (`find -exec`, `sort -o`, `rg --pre`, ...);
- options that read a file of further names, whose files no path check sees
  (`--files0-from` of sort, wc and du, `find -files0-from`, `file -f`);
- options that read a named file as data of their own: patterns, magic, exclusions, random
  bytes or ignore rules (`grep -f` and `--exclude-from`, `file -m`, `du -X`,
  `sort --random-source`, `rg -f` and `--ignore-file`, tree's `--fromfile`, `--infofile` and
  `--gitfile`, git's `-O`). Such a file's lines come back in messages in whatever shape the
  command gives them, which no redaction recognises, and its name may hide in a cluster
  (`-bmFILE`) or a list (`-m a:b`), so such a command always needs an approval;
- options that follow symbolic links met while walking a directory, which may lead outside
  every checked path (`grep -R`, `rg -L`, `find -L` and `-follow`, `tree -l`, `du -L`, `ls -L`).
  `ls -L` only stats its operands, which are checked, but with `-R` it lists every linked
  directory, so it is refused in any combination;
- `sort -T`, which writes temporary files in the directory it names.

A few read-only commands also write once given another operand (`uniq IN OUT`). Options are
matched as `spells` reads them: abbreviated, clustered, or with a `=value`.
"""

from __future__ import annotations

from collections.abc import Sequence

from domain.shell.argv import invokes, options_and_operands, spells
from domain.shell.syntax import Reading, Simple, writes

UNSAFE_OPTIONS: dict[str, tuple[str, ...]] = {
    key: tuple(options.split())
    for key, options in {
        "find": "-exec -execdir -ok -okdir -delete -fprint -fprint0 -fprintf -fls"
        " -files0-from -L -follow",
        "sort": "-o --output --compress-program --files0-from -T --temporary-directory"
        " --random-source",
        "wc": "--files0-from",
        "du": "--files0-from -L --dereference -X --exclude-from",
        "grep": "-R --dereference-recursive -f --file --exclude-from",
        "rg": "--pre --hostname-bin -L --follow -f --file --ignore-file",
        "tree": "-o -R -l --fromfile --infofile --gitfile",
        "file": "-C --compile -f --files-from -m --magic-file",
        "ls": "-L --dereference",
        # No git phrase is reviewed-safe by default (repository config runs programs), but a
        # configured one still must not write or read a named order file.
        "git diff": "--output --ext-diff -O",
        "git log": "--output --ext-diff -O",
        "git show": "--output --ext-diff -O",
        "git branch": "-d -D --delete -m -M --move -c -C --copy -f --force -t --track --no-track"
        " -u --set-upstream-to --unset-upstream --edit-description --create-reflog",
    }.items()
}
"""Options that make an otherwise read-only command write, run, read named files or follow links."""
MAX_OPERANDS: dict[str, int] = {"git branch": 0, "uniq": 1}
"""Read-only commands that write once given more operands (`git branch NAME`, `uniq IN OUT`)."""


def reviewed_safe_phrase(reading: Reading, phrases: Sequence[str]) -> str | None:
    """The phrase the first simple command matched, when every one matched a phrase safely.

    The caller has already made sure the command is parsed, undenied and runs no command line
    from a string.
    """
    if "&" in reading.separators:
        return None
    redirections = [pair for simple in reading.commands for pair in simple.redirections]
    if any(writes(operator, target) for operator, target in redirections):
        return None
    matched: list[str] = []
    for simple in reading.commands:
        phrase = next((p for p in phrases if _starts_with(simple.argv, p.split())), None)
        if phrase is None or _unsafe(simple):
            return None
        matched.append(phrase)
    return matched[0]


def _starts_with(argv: Sequence[str], words: Sequence[str]) -> bool:
    return len(argv) >= len(words) and list(argv[: len(words)]) == list(words)


def _unsafe(simple: Simple) -> bool:
    """Whether an option or an extra operand may make a read-only command unsafe."""
    argv = simple.argv
    for key, options in UNSAFE_OPTIONS.items():
        words = key.split()
        if invokes(argv, words):
            arguments = argv[len(words) :]
            if any(spells(a, o) for a in arguments for o in options):
                return True
    for key, limit in MAX_OPERANDS.items():
        words = key.split()
        if invokes(argv, words):
            _, operands = options_and_operands(argv[len(words) :])
            if len(operands) > limit:
                return True
    return False
