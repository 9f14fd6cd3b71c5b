"""The shell policy against escapes E1-E6 and at its size bounds; unit tests of the domain."""

from __future__ import annotations

import shlex

import pytest

from domain.shell.links import link_targets
from domain.shell.policy import (
    MAX_COMMAND_BYTES,
    MAX_NESTED_CHARS,
    MAX_NESTED_LINES,
    MAX_NESTING,
    MAX_PROBLEM_CHARS,
    ShellAssessment,
    ShellPolicy,
    assess_command,
)
from domain.shell.words import MAX_CLUSTER_LETTERS
from tests.builders import nested_shell

POLICY = ShellPolicy()
BUDGET_PROBLEM = "the command runs more wrapped or nested commands than can be read"


def assess(command: str) -> ShellAssessment:
    """Assess `command` under the default policy."""
    return assess_command(command, POLICY)


@pytest.mark.parametrize(
    ("command", "paths"),
    [
        ("file -bm../o/s ok.txt", ("m../o/s", "../o/s", "ok.txt")),
        ("file -bm/out ok.txt", ("m/out", "/out", "ok.txt")),
        ("file -bm12 ok.txt", ("m12", "12", "2", "ok.txt")),
        ("grep -cif../o/x ok.txt", ("if../o/x", "f../o/x", "../o/x", "ok.txt")),
        ("du -XFILE .", ("FILE", "ILE", "LE", "E", ".")),
        ("cc -I/usr/include", ("/usr/include",)),
    ],
    ids=["relative", "absolute", "plain-name", "third-letter", "no-slash", "first-letter"],
)
def test_every_suffix_of_an_option_cluster_is_a_path(command: str, paths: tuple[str, ...]) -> None:
    """E1, E5: whichever letter takes a value, the value after it is checked as a path."""
    assert paths == assess(command).paths


def test_a_cluster_longer_than_the_bound_is_not_read() -> None:
    """Up to `MAX_CLUSTER_LETTERS` leading letters are read; one more leaves it unparsed.

    A long option or an operand after `--` is no cluster, however long.
    """
    within = assess("ls -" + "l" * MAX_CLUSTER_LETTERS)
    beyond = assess("ls -" + "l" * (MAX_CLUSTER_LETTERS + 1))
    assert (True, MAX_CLUSTER_LETTERS - 1) == (within.parsed, len(within.paths))
    assert (False, None) == (beyond.parsed, beyond.reviewed_safe_phrase)
    assert f"longer than {MAX_CLUSTER_LETTERS} letters" in beyond.problem
    for long_words in ("ls --", "ls -- -"):
        assert assess(long_words + "l" * (MAX_CLUSTER_LETTERS + 1)).parsed


@pytest.mark.parametrize(
    ("command", "paths"),
    [
        ("file -m ok.txt:../o/s ok.txt", ("ok.txt:../o/s", "ok.txt", "../o/s")),
        ("file --magic-file=a:/k b", ("a:/k", "a", "/k", "b")),
        ("file -bma:/k", ("ma:/k", "a:/k", ":/k", "ma", "/k", "a")),
        ("cat a:~/k", ("a:~/k", "a", "~/k", "./~/k")),
        ("PATH=/x:/y ls", ("/x:/y", "/x", "/y")),
        ("make DIRS=a:/b", ("DIRS=a:/b", "a:/b", "DIRS=a", "/b", "a")),
    ],
    ids=["operand", "long-value", "cluster", "home-in-a-list", "assignment", "equals-part"],
)
def test_each_part_of_a_colon_list_is_a_path(command: str, paths: tuple[str, ...]) -> None:
    """E2: a colon-separated list is checked part by part, not as one name."""
    assert paths == assess(command).paths


@pytest.mark.parametrize(
    ("command", "segments", "paths"),
    [
        ("cat 12</dev/null", (("cat", "12"),), ("12", "/dev/null")),
        ("cat 2</dev/null", (("cat",),), ("/dev/null",)),
        ("echo x 10>out", (("echo", "x", "10"),), ("x", "10", "out")),
    ],
    ids=["two-digits", "one-digit", "two-digits-out"],
)
def test_only_one_digit_before_a_redirection_is_a_descriptor(
    command: str, segments: tuple[tuple[str, ...], ...], paths: tuple[str, ...]
) -> None:
    """E6: as dash reads it, `12<x` is the word `12` and a redirection, so `12` is checked."""
    assessment = assess(command)
    assert (segments, paths) == (assessment.segments, assessment.paths)


@pytest.mark.parametrize(
    ("argv", "targets"),
    [
        ("ln -s ../x ../12", ["../12/../x", "../../x"]),
        ("ln -s ../x", []),
        ("ln -s /etc/x l", []),
        ("ln -st d ../a b", ["d/../a", "d/b"]),
        ("ln --target-directory=d ../a", ["d/../a"]),
        ("ln --target d ../a", ["d/../a"]),
        ("ln -S .bak -s ../a sub/l", ["sub/l/../a", "sub/../a"]),
        ("ln --suffix .bak -s ../a sub/l", ["sub/l/../a", "sub/../a"]),
        ("ln --suffix=.bak -s ../a sub/l", ["sub/l/../a", "sub/../a"]),
        ("ln --s ../a sub/l", ["sub/l/../a", "sub/../a"]),
        ("ln -tdir ../a", ["dir/../a"]),
        ("ln -s ../a -", ["-/../a"]),
        ("ln -s ../a l -t", []),
        ("ln -s ../a l --target-directory", []),
        ("ln -s ../a l --suffix", ["l/../a"]),
        ("ln -s -- ../a -l", ["-l/../a"]),
        ("/bin/ln ../a b c", ["c/../a", "c/b"]),
        ("cp -s ../a b", []),
    ],
    ids=[
        "link-above",
        "link-here",
        "absolute",
        "target-directory",
        "long-target-directory",
        "abbreviated",
        "suffix-value",
        "long-suffix-value",
        "long-suffix-attached",
        "ambiguous-long-option",
        "attached-target-directory",
        "dash-operand",
        "missing-directory",
        "missing-long-directory",
        "missing-suffix",
        "double-dash",
        "several-targets",
        "not-ln",
    ],
)
def test_a_link_target_is_named_from_the_links_directory(argv: str, targets: list[str]) -> None:
    """E6: a relative target is resolved where the link lands, whichever place that is."""
    assert targets == link_targets(argv.split())


def test_an_approved_link_names_its_target_from_where_it_lands() -> None:
    """E6: `ln -s ../outside/s ../12` names `../../outside/s`, also behind a wrapper."""
    for command in ("ln -s ../outside/s ../12", "nice busybox ln -s ../outside/s ../12"):
        assert "../../outside/s" in assess(command).paths


@pytest.mark.parametrize(
    ("command", "paths"),
    [
        ("cat $PWD/../outside/secret.txt", ()),
        ("cat /etc/$X", ("/etc/",)),
        ("cat a/`id`/../../x", ("a/",)),
        ("cat x 2>$HOME/../e", ("x",)),
        ("ln -s $X/../a ../l", ("../l",)),
        ("cat /$X", ("/",)),
    ],
    ids=["parameter", "after-a-directory", "backticks", "redirection", "link", "at-the-root"],
)
def test_a_word_with_an_expansion_names_only_the_directory_before_it(
    command: str, paths: tuple[str, ...]
) -> None:
    """What `$` or a backtick names is never taken as a path inside the root; it needs approval."""
    assessment = assess(command)
    assert (False, None, paths) == (
        assessment.parsed,
        assessment.reviewed_safe_phrase,
        assessment.paths,
    )


@pytest.mark.parametrize(
    "command", ["cat ~root/x", "ls ~nobody", "X=~root/x ls", "PATH=/bin:~root/bin ls", "ls a=~x"]
)
def test_another_users_home_needs_approval(command: str) -> None:
    """`~user` is not resolved by this reading, so the command is never reviewed-safe."""
    assessment = assess(command)
    assert (False, None) == (assessment.parsed, assessment.reviewed_safe_phrase)
    assert "'~user'" in assessment.problem


@pytest.mark.parametrize(
    ("command", "paths"),
    [
        ("cat ~/x", ("~/x",)),
        ("cat '~/x'", ("./~/x",)),
        ("cat \\~/x", ("./~/x",)),
        ("cat <'~x'", ("./~x",)),
        ("cat '~root'", ("./~root",)),
        ("grep --file=~/x a", ("~/x", "./~/x", "a")),
        ("cat x=~/y", ("x=~/y", "~/y", "./~/y")),
        ("ls -I~/z", ("~/z", "./~/z")),
        ("X=~/y ls", ("~/y",)),
    ],
    ids=[
        "expanded",
        "quoted",
        "escaped",
        "quoted-target",
        "quoted-user",
        "long-value",
        "after-equals",
        "cluster",
        "assignment",
    ],
)
def test_a_tilde_names_the_home_and_the_literal_name_as_shells_differ(
    command: str, paths: tuple[str, ...]
) -> None:
    """An unquoted `~` starting a word is a home, a quoted one a name; inside a word, both."""
    assessment = assess(command)
    assert (True, paths) == (assessment.parsed, assessment.paths)


@pytest.mark.parametrize(
    "command",
    [
        "file -m magic ok.txt",
        "file -bmmagic ok.txt",
        "file --magic-file=magic ok.txt",
        "file --mag magic ok.txt",
        "grep -f patterns ok.txt",
        "grep -cifpatterns ok.txt",
        "grep --file=patterns ok.txt",
        "grep --exclude-from=list -r x .",
        "du -X list .",
        "du -sXlist .",
        "du --exclude-from=list .",
        "sort --random-source=bytes a",
        "rg -f patterns x",
        "rg --ignore-file=rules x",
        "tree --fromfile listing",
        "tree --infofile=info",
        "tree --gitfile=rules",
    ],
)
def test_an_option_that_reads_a_named_file_is_not_reviewed_safe(command: str) -> None:
    """E1-E5: a file read as patterns, magic or exclusions always needs an approval."""
    assessment = assess(command)
    assert (True, None, None) == (
        assessment.parsed,
        assessment.hard_denied,
        assessment.reviewed_safe_phrase,
    )


def test_a_command_of_exactly_the_byte_bound_is_read() -> None:
    """`MAX_COMMAND_BYTES` bytes are read, one byte more is not; bytes count, not characters."""
    wide = "é" * 1000
    padding = MAX_COMMAND_BYTES - len("ls ") - len(wide.encode())
    exact = "ls " + wide + "a" * padding
    over = exact + "a"
    assert MAX_COMMAND_BYTES == len(exact.encode())
    assert (True, "ls") == (assess(exact).parsed, assess(exact).reviewed_safe_phrase)
    assert (False, "the command is longer than 64 KiB") == (
        assess(over).parsed,
        assess(over).problem,
    )


def test_exactly_the_nested_line_budget_is_read() -> None:
    """`MAX_NESTED_LINES` command strings are read; one more leaves the command unparsed."""
    exact = "; ".join(["sh -c ls"] * MAX_NESTED_LINES)
    over = exact + "; sh -c ls"
    assert (True, "") == (assess(exact).parsed, assess(exact).problem)
    assert (False, BUDGET_PROBLEM) == (assess(over).parsed, assess(over).problem)


def test_exactly_the_nested_character_budget_is_read() -> None:
    """Command strings of `MAX_NESTED_CHARS` characters in all are read; one more is not."""
    inner = "ls " + "a" * 40_000
    deep = nested_shell(inner, 3)
    read = sum(len(nested_shell(inner, level)) for level in range(3))
    pad = MAX_NESTED_CHARS - read
    assert pad >= len("ls")
    exact = f"{deep}; sh -c " + shlex.quote("ls " + "b" * (pad - 3))
    over = f"{deep}; sh -c " + shlex.quote("ls " + "b" * (pad - 2))
    assert (True, "") == (assess(exact).parsed, assess(exact).problem)
    assert (False, BUDGET_PROBLEM) == (assess(over).parsed, assess(over).problem)


NOT_PARSED_INSIDE = "a command line it runs is not parsed: "


def test_a_problem_of_exactly_the_cap_is_kept_whole_and_a_longer_one_is_cut() -> None:
    """At `MAX_PROBLEM_CHARS` a problem is whole; past it, cut to the cap and marked `...`."""
    exact = NOT_PARSED_INSIDE * MAX_NESTING + "compound commands ('function') are not supported"
    longer = NOT_PARSED_INSIDE * MAX_NESTING + "a glob pattern is expanded by the shell at run time"
    assert (MAX_PROBLEM_CHARS, MAX_PROBLEM_CHARS + 3) == (len(exact), len(longer))
    assert exact == assess(nested_shell("function f", MAX_NESTING)).problem
    capped = longer[: MAX_PROBLEM_CHARS - len("...")] + "..."
    assert capped == assess(nested_shell("ls *", MAX_NESTING)).problem


@pytest.mark.parametrize(
    ("command", "problem"),
    [
        ("ls \udc80", "the command is not valid UTF-8"),
        ("ls\nls", "the command spans more than one line"),
        ("ls\x07", "the command contains NUL or another control character"),
        (" \t", "the command is empty"),
    ],
)
def test_an_unreadable_command_says_exactly_why(command: str, problem: str) -> None:
    """The problem of a command that is not read at all is one fixed sentence."""
    assert problem == assess(command).problem


def test_a_nest_too_deep_still_denies_a_rule_behind_an_env_escape() -> None:
    r"""The last-resort scan reads env's `\_` as a space, so `sudo\_ls` deep down is `sudo`."""
    assert "sudo" == assess(nested_shell("env -S sudo\\_ls", MAX_NESTING + 1)).hard_denied


@pytest.mark.parametrize(
    "command",
    [
        "find -exec sudo ls \\;",
        "find . -exec ls \\; -exec sudo x \\;",
        "env -- sudo ls",
        "nice -- sudo ls",
        "env --ignore-environment sudo ls",
        "env --ignore-environment -u X sudo ls",
        "env " + "-S ls " * 15 + "-S 'sudo x'",
        "fish --command='sudo ls'",
        "fish --comm='X=1 sudo ls'",
    ],
    ids=[
        "exec-first",
        "second-exec",
        "env-dashes",
        "nice-dashes",
        "long-flag",
        "long-flag-then-short",
        "last-split",
        "fish-command",
        "fish-abbreviated-with-assignment",
    ],
)
def test_a_denied_command_is_found_wherever_a_wrapper_puts_it(command: str) -> None:
    """Each `-exec`, the word after `--`, and the last `env -S` string are read for rules."""
    assert "sudo" == assess(command).hard_denied


def test_a_valued_option_at_the_end_of_a_wrapper_reads_cleanly() -> None:
    """`env --unset` or `env -u` with no value after it is parsed, not an error."""
    for command in ("env --unset", "env -u"):
        assessment = assess(command)
        assert (True, None) == (assessment.parsed, assessment.hard_denied)


@pytest.mark.parametrize("command", ["uniq -- -a -b", "uniq - out", "uniq -- a -"])
def test_uniq_with_an_output_operand_is_not_reviewed_safe(command: str) -> None:
    """After `--` every word is an operand, and a lone `-` is one too: `uniq IN OUT` writes."""
    assessment = assess(command)
    assert (True, None) == (assessment.parsed, assessment.reviewed_safe_phrase)


def test_a_glob_names_the_directory_before_its_first_glob_character() -> None:
    """`/*` names `/`, and `src/*/x` names `src/`, never a literal path holding the glob."""
    assessment = assess("ls /* src/*/x")
    assert (False, ("/", "src/")) == (assessment.parsed, assessment.paths)


@pytest.mark.parametrize(
    ("command", "paths"),
    [
        ("cat a=..", ("a=..", "..")),
        ("X=~ ls", ("~",)),
        ("X=/etc/* ls", ("/etc/",)),
        ("X='./a*' ls", ("./a*",)),
    ],
    ids=["dot-value", "home-value", "globbed-assignment", "quoted-glob-assignment"],
)
def test_a_value_after_equals_names_a_path_when_it_looks_like_one(
    command: str, paths: tuple[str, ...]
) -> None:
    """A value starting with `.` or `~` is a path; an unquoted glob in it names its directory."""
    assert paths == assess(command).paths
