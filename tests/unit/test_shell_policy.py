"""Tests for the shell command policy: reading, paths, hard deny and reviewed-safe; unit tests."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from domain.shell.policy import (
    DEFAULT_HARD_DENY,
    DEFAULT_REVIEWED_SAFE,
    MAX_COMMAND_BYTES,
    MAX_NESTING,
    MAX_PROBLEM_CHARS,
    RM_RECURSIVE_FORCE_ROOT,
    Phrase,
    ShellAssessment,
    ShellPolicy,
    assess_command,
)
from tests.builders import nested_shell

POLICY = ShellPolicy()
SHELLISH = st.text(alphabet=" \tabcls-./~*?[]{}()<>|&;'\"\\$`#=!12", max_size=40)
PLAIN_WORDS = st.lists(st.from_regex(r"[a-z0-9._/-]{1,8}", fullmatch=True), max_size=3)
DENIED_EXAMPLES = [rule.replace("mkfs.*", "mkfs.ext4") for rule in DEFAULT_HARD_DENY]
DENIED_EXAMPLES.remove(RM_RECURSIVE_FORCE_ROOT)
WRAPPING_PREFIXES = [
    *("", "env ", "nohup ", "A=1 ", "/usr/bin/env -i ", "ls; ", "ls | ", "ls && "),
    *("stdbuf -o0 ", "setsid ", "chroot /x ", "busybox ", "eval ", "env -S ", "xargs "),
    *("timeout 5 ", "nice ", "find . -exec "),
]


def assess(command: str) -> ShellAssessment:
    """Assess `command` under the default policy."""
    return assess_command(command, POLICY)


@pytest.mark.parametrize(
    ("command", "segments"),
    [
        ("ls -la", (("ls", "-la"),)),
        (
            "cat a | grep b && wc -l; echo done &",
            (("cat", "a"), ("grep", "b"), ("wc", "-l"), ("echo", "done")),
        ),
        ("ls||pwd", (("ls",), ("pwd",))),
        ("ls |& cat", (("ls",), ("cat",))),
        ("ls;", (("ls",),)),
        ("echo 'a;b' \"c && d\"", (("echo", "a;b", "c && d"),)),
        ("echo a\\;b \\|", (("echo", "a;b", "|"),)),
        ("echo ';' '&&' '>' x", (("echo", ";", "&&", ">", "x"),)),
        ("cat 2>err a", (("cat", "a"),)),
        ("echo 2>x", (("echo",),)),
        ("echo 2 >x", (("echo", "2"),)),
        ('echo "2">x', (("echo", "2"),)),
        ("cat <in >out 2>>err", (("cat",),)),
        ("echo hi 1>&2", (("echo", "hi"),)),
        ("A=1 B=2 env", (("A=1", "B=2", "env"),)),
        ("echo a#b '#c'", (("echo", "a#b", "#c"),)),
        ("echo ''", (("echo", ""),)),
        ("find . -name {} -print", (("find", ".", "-name", "{}", "-print"),)),
        ("> out", ((),)),
    ],
    ids=[
        "argv",
        "pipes-and-lists",
        "no-spaces",
        "pipe-stderr",
        "trailing-semicolon",
        "quoted-operators",
        "escaped-operators",
        "quoted-operator-words",
        "fd-redirection",
        "fd-against-operator",
        "spaced-digit-is-an-argument",
        "quoted-digit-is-an-argument",
        "several-redirections",
        "fd-duplication",
        "assignments-stay",
        "hash-inside-words",
        "empty-word",
        "find-placeholder",
        "redirection-only",
    ],
)
def test_command_splits_into_simple_commands(
    command: str, segments: tuple[tuple[str, ...], ...]
) -> None:
    """Operators and redirections separate argvs; quoted or escaped operators stay words."""
    assessment = assess(command)
    assert ("", segments) == (assessment.problem, assessment.segments)
    assert assessment.parsed


@pytest.mark.parametrize(
    ("command", "paths"),
    [
        ("cat a > b", ("a", "b")),
        ('cat "my file/x"', ("my file/x",)),
        ("ls ~ ~/x ~user/y", ("~", "~/x", "~user/y")),
        ("ls src/*.py *.py /etc/pa* './a b/'?", ("src/", "/etc/", "./a b/")),
        ("grep -rI --include=*.py --exclude-dir=./build foo .", ("I", "./build", "foo", ".")),
        ("cc -I/usr/include -o out main.c", ("/usr/include", "out", "main.c")),
        ("./run.sh --flag", ("./run.sh",)),
        ("/bin/ls .. .hidden", ("/bin/ls", "..", ".hidden")),
        ("ls 2>&1 >/dev/null", ("/dev/null",)),
        ("cat < in.txt >> log/out.txt", ("in.txt", "log/out.txt")),
        ("ls a/ a/ && cat a/", ("a/",)),
        ("make DESTDIR=/srv/x", ("DESTDIR=/srv/x", "/srv/x")),
        ("FOO=./x ls", ("./x",)),
        ("echo hi >&2 >&-", ("hi",)),
        ("ls >& all.log", ("all.log",)),
        ("ls > *.txt", ()),
        ("git log -- src", ("log", "src")),
        ("cat notes", ("notes",)),
        ("grep -R x", ("x",)),
        ("grep -rn 'a|b' src", ("n", "a|b", "src")),
        ("ls -la", ("a",)),
        ("ls --color=auto --sort=size", ("auto", "size")),
        ("cat -- -v --x", ("-v", "--x")),
        ("grep -e x -- -- y", ("x", "--", "y")),
        ("grep '*.py' x", ("*.py", "x")),
        ("cat a > '*.txt'", ("a", "*.txt")),
        ("sh -c 'cat /etc/passwd'", ("cat /etc/passwd", "/etc/passwd")),
    ],
    ids=[
        "redirection-target",
        "quoted",
        "tilde-unexpanded",
        "glob-prefix",
        "option-values",
        "attached-short-value",
        "command-with-slash",
        "dot-names",
        "dev-null",
        "input-and-append",
        "deduplicated",
        "argument-with-equals",
        "assignment-value",
        "descriptor-duplication",
        "both-streams-to-file",
        "bare-glob-target",
        "subcommand-and-operand",
        "bare-word-link",
        "bare-word-regex",
        "quoted-pattern",
        "short-option-cluster",
        "long-option-values",
        "after-double-dash",
        "second-double-dash",
        "quoted-glob-is-literal",
        "quoted-glob-target",
        "string-run-by-a-shell",
    ],
)
def test_paths_are_named_as_written(command: str, paths: tuple[str, ...]) -> None:
    """Every operand, every long option's value, path-like values and targets name paths."""
    assert paths == assess(command).paths


@pytest.mark.parametrize(
    ("command", "problem"),
    [
        ("", "empty"),
        (" \t ", "empty"),
        ("echo $HOME", "'$'"),
        ("echo '$HOME'", "'$'"),
        ("echo $(id)", "'$'"),
        ("echo `id`", "backticks"),
        ("echo 'unbalanced", "No closing quotation"),
        ('echo "unbalanced', "No closing quotation"),
        ("echo a\\", "No escaped character"),
        ("cat <(ls)", "process substitution"),
        ("ls >(cat)", "process substitution"),
        ("(ls)", "subshells"),
        ("{ ls; }", "braces"),
        ("echo {a,b}", "braces"),
        ("cat <<EOF", "here-documents"),
        ("cat <<< hi", "here-documents"),
        ("ls\nls", "more than one line"),
        ("ls\x00", "control character"),
        ("ls\r", "control character"),
        ("ls # a note", "comments"),
        ("ls >#note", "comments"),
        ("ls ;; ls", "unknown operator"),
        ("ls |", "no command after '|'"),
        ("; ls", "no command before ';'"),
        ("ls && && ls", "no command before '&&'"),
        ("ls >", "has no target"),
        ("ls > ; ls", "has no target"),
        ("if true; then ls; fi", "compound commands"),
        ("cd ~-", "'~+' and '~-'"),
        ("l? -la", "glob pattern"),
        ("x" * (MAX_COMMAND_BYTES + 1), "longer than 64 KiB"),
        ("ls \udc80", "not valid UTF-8"),
        (":(){ :|:& };:", "subshells"),
    ],
    ids=[
        "empty",
        "blank",
        "parameter",
        "quoted-dollar",
        "command-substitution",
        "backticks",
        "single-quote-open",
        "double-quote-open",
        "trailing-escape",
        "process-substitution-in",
        "process-substitution-out",
        "subshell",
        "grouping",
        "brace-expansion",
        "here-document",
        "here-string",
        "newline",
        "nul",
        "carriage-return",
        "comment",
        "comment-as-target",
        "case-terminator",
        "trailing-pipe",
        "leading-separator",
        "doubled-separator",
        "missing-target",
        "operator-as-target",
        "compound-command",
        "old-directory",
        "glob-command-name",
        "too-long",
        "lone-surrogate",
        "fork-bomb",
    ],
)
def test_command_the_shell_decides_at_run_time_is_not_parsed(command: str, problem: str) -> None:
    """Expansions, substitutions, grouping and malformed input leave a command unparsed."""
    assessment = assess(command)
    assert (False, None) == (assessment.parsed, assessment.reviewed_safe_phrase)
    assert problem in assessment.problem


def test_command_that_is_not_utf8_is_stored_escaped() -> None:
    """A lone surrogate is backslash-escaped so the assessment stays storable."""
    assert "ls \\udc80" == assess("ls \udc80").command


@pytest.mark.parametrize(
    ("command", "rule"),
    [
        ("sudo ls", "sudo"),
        ("/usr/bin/sudo ls", "sudo"),
        ('"sudo" ls', "sudo"),
        ('su""do ls', "sudo"),
        ("s\\udo ls", "sudo"),
        ("env sudo ls", "sudo"),
        ("env -i -u HOME A=1 sudo ls", "sudo"),
        ("/usr/bin/env sudo ls", "sudo"),
        ("nice -n 5 sudo ls", "sudo"),
        ("nohup env sudo ls", "sudo"),
        ("timeout 5 sudo ls", "sudo"),
        ("timeout -s KILL 5 sudo ls", "sudo"),
        ("find . | xargs -n 1 sudo rm", "sudo"),
        ("command sudo ls", "sudo"),
        ("exec -a name sudo ls", "sudo"),
        ("time -p sudo ls", "sudo"),
        ("A=1 sudo ls", "sudo"),
        ("ls; sudo ls", "sudo"),
        ("ls && su", "su"),
        ("doas ls", "doas"),
        ("pkexec ls", "pkexec"),
        ("mkfs /dev/sdb", "mkfs"),
        ("mkfs.ext4 /dev/sdb", "mkfs.*"),
        ("shutdown -h now", "shutdown"),
        ("reboot", "reboot"),
        ("halt", "halt"),
        ("poweroff", "poweroff"),
        ("dd if=/dev/zero of=/dev/sda", "dd"),
        ("rm -rf /", "rm -rf /"),
        ("rm -fr / --verbose", "rm -fr /"),
        ("chmod -R 777 /", "chmod -R 777 /"),
        ("rm -r -f ~", RM_RECURSIVE_FORCE_ROOT),
        ("rm -Rf /*", RM_RECURSIVE_FORCE_ROOT),
        ("rm --recursive --force ~/", RM_RECURSIVE_FORCE_ROOT),
        ("rm --rec --forc ~/*", RM_RECURSIVE_FORCE_ROOT),
        ("rm -rf --no-preserve-root /", RM_RECURSIVE_FORCE_ROOT),
        ("rm -fr -- //", RM_RECURSIVE_FORCE_ROOT),
        ('rm -rf "&&" /', RM_RECURSIVE_FORCE_ROOT),
        ("sudo $(echo x)", "sudo"),
        ("sudo 'unbalanced", "sudo"),
        ("ls\nsudo reboot", "sudo"),
        ("if true; then sudo ls; fi", "sudo"),
        ("/usr/bin/sud? ls", "sudo"),
        ("sudo " + "x" * MAX_COMMAND_BYTES, "sudo"),
    ],
)
def test_hard_deny_rule_matches(command: str, rule: str) -> None:
    """A denied command is denied through paths, quotes, wrappers, lists and parse failures."""
    assessment = assess(command)
    assert (rule, None) == (assessment.hard_denied, assessment.reviewed_safe_phrase)


@pytest.mark.parametrize(
    "command",
    [
        "echo sudo",
        "grep sudo /etc/group",
        "echo 'sudo reboot'",
        "sudoku",
        "ddrescue a b",
        "sum file",
        "rm -rf build",
        "rm -rf ~/project",
        "rm -rf ./",
        "rm -r /",
        "rm -f /",
        "command -v sudo",
        "chmod -R 755 /srv",
        "git push --force",
    ],
)
def test_command_no_rule_denies_passes_hard_deny(command: str) -> None:
    """Naming a denied command as an argument, or a milder cousin of a rule, is not denied."""
    assert None is assess(command).hard_denied


@pytest.mark.parametrize(
    ("command", "phrase"),
    [
        ("ls", "ls"),
        ("ls -la src", "ls"),
        ("pwd", "pwd"),
        ("cat log.txt | head -n 5", "cat"),
        ("ls -l --dereference-command-line src", "ls"),
        ("grep -r needle src", "grep"),
        ("du -sh .", "du"),
        ("find . -type l", "find"),
        ("grep '*.py' x", "grep"),
        ("ls a\\*b '[x]'", "ls"),
        ("ls 2>&1", "ls"),
        ("cat < in.txt", "cat"),
        ("echo hi >&2", "echo"),
        ('grep -rn "a|b" .', "grep"),
        ("find . -name '*.py' -type f", "find"),
        ("cat a && echo done || echo failed", "cat"),
        ("ls;", "ls"),
        ("uniq counts.txt", "uniq"),
        ("sort -n -k 2 data.txt", "sort"),
        ("rg --pre-glob '*.gz' needle", "rg"),
        ('cat "a;b"', "cat"),
        ("echo ';'", "echo"),
        ("tree -L 2", "tree"),
    ],
)
def test_read_only_command_is_reviewed_safe(command: str, phrase: str) -> None:
    """Every simple command starts with a reviewed-safe phrase and nothing writes."""
    assessment = assess(command)
    assert (True, None, phrase) == (
        assessment.parsed,
        assessment.hard_denied,
        assessment.reviewed_safe_phrase,
    )


@pytest.mark.parametrize(
    "command",
    [
        "git push",
        "git",
        "git -c core.pager=less log",
        "ls > x",
        "ls >> x",
        "ls 2> err",
        "ls 2>/dev/null",
        "ls &> x",
        "ls >& x",
        "ls >| x",
        "cat <> x",
        "ls &",
        "ls & ls",
        "find . -delete",
        "find . -name x -exec rm {} \\;",
        "find . -name x -fprint out",
        'find . "|" ls -delete',
        "sort -o out a",
        "sort -uo out a",
        "sort --outp=x a",
        "sort --compress-program=sh a",
        "rg --pre=sh needle",
        "tree -o out",
        "file -C -m magic",
        "uniq a b",
        "/bin/ls",
        "LC_ALL=C ls",
        "sed -n 1p a",
        "ls | xargs rm",
        "git status; git push",
        "> out",
    ],
)
def test_command_that_may_write_or_run_is_not_reviewed_safe(command: str) -> None:
    """Unlisted commands, output redirection, background jobs and write options need review."""
    assessment = assess(command)
    assert (True, None, None) == (
        assessment.parsed,
        assessment.hard_denied,
        assessment.reviewed_safe_phrase,
    )


def test_empty_hard_deny_list_denies_nothing() -> None:
    """The rules are data: without them even `rm -rf /` is only unreviewed."""
    assessment = assess_command("rm -rf /", ShellPolicy(hard_deny=()))
    assert (None, None) == (assessment.hard_denied, assessment.reviewed_safe_phrase)


@pytest.mark.parametrize(
    ("command", "outcome"),
    [
        ("git push --force origin", ("git push --force", None)),
        ("git push origin", (None, None)),
        ("python3 x.py", ("python*", None)),
        ("make test -j4", (None, "make test")),
        ("make", (None, None)),
        ("ls", (None, None)),
    ],
)
def test_custom_phrases_deny_and_allow(command: str, outcome: tuple[str | None, ...]) -> None:
    """Configured phrases match word-wise from the start of the argv."""
    policy = ShellPolicy(
        hard_deny=("git push --force", "python*"), reviewed_safe=("make test", "git status")
    )
    assessment = assess_command(command, policy)
    assert outcome == (assessment.hard_denied, assessment.reviewed_safe_phrase)


def test_reviewed_safe_phrase_is_the_first_command_s_phrase() -> None:
    """A list of safe commands reports the phrase the first one matched."""
    assert "pwd" == assess("pwd && ls").reviewed_safe_phrase


@pytest.mark.parametrize("phrase", ["", " ", " ls", "ls ", "git  status", "git\tstatus"])
def test_policy_rejects_a_phrase_that_is_not_single_spaced_words(phrase: str) -> None:
    """A phrase is one or more words separated by single spaces."""
    with pytest.raises(ValidationError, match="single spaces"):
        ShellPolicy(reviewed_safe=(phrase,))


def test_default_policy_holds_the_default_rules() -> None:
    """The defaults are the module's published tuples."""
    assert (DEFAULT_HARD_DENY, DEFAULT_REVIEWED_SAFE) == (POLICY.hard_deny, POLICY.reviewed_safe)


@pytest.mark.parametrize(
    "fields",
    [
        {"parsed": True, "problem": "odd"},
        {"parsed": False},
        {"parsed": False, "problem": "odd", "reviewed_safe_phrase": "ls"},
        {"parsed": True, "hard_denied": "sudo", "reviewed_safe_phrase": "ls"},
    ],
    ids=["parsed-with-problem", "unparsed-without-problem", "unparsed-safe", "denied-safe"],
)
def test_assessment_rejects_a_contradictory_shape(fields: dict[str, object]) -> None:
    """Parsed means no problem, and only a parsed, undenied command can be reviewed-safe."""
    with pytest.raises(ValidationError):
        ShellAssessment.model_validate({"command": "ls", **fields})


@given(st.one_of(st.text(), st.text(st.characters(exclude_categories=())), SHELLISH))
def test_any_text_gets_a_consistent_assessment(command: str) -> None:
    """Assessment never raises; unparsed or denied commands are never reviewed-safe."""
    assessment = assess(command)
    assert assessment.parsed == (assessment.problem == "")
    if assessment.reviewed_safe_phrase is not None:
        assert assessment.parsed
        assert None is assessment.hard_denied
        assert assessment.reviewed_safe_phrase in POLICY.reviewed_safe
    assert "do not line up" not in assessment.problem


@given(st.text(), st.text())
def test_command_with_a_dollar_is_never_reviewed_safe(before: str, after: str) -> None:
    """Any `$`, quoted or not, leaves the command unparsed."""
    assessment = assess(f"{before}${after}")
    assert (False, None) == (assessment.parsed, assessment.reviewed_safe_phrase)


@given(
    st.sampled_from(DENIED_EXAMPLES),
    st.sampled_from(WRAPPING_PREFIXES),
    PLAIN_WORDS,
)
def test_denied_phrase_stays_denied_behind_wrappers_and_lists(
    example: str, prefix: str, arguments: list[str]
) -> None:
    """A hard-deny phrase is found after a wrapper or another command, whatever follows it."""
    command = " ".join([prefix + example, *arguments])
    assert None is not assess(command).hard_denied


@given(st.lists(st.text(alphabet=";&|<>(){}#~*?[]! \\'\"", min_size=1), max_size=4))
def test_quoted_words_are_never_operators(words: list[str]) -> None:
    """A fully quoted word is one argument however many operator characters it holds."""
    assessment = assess(shlex.join(["echo", *words]))
    assert ("", (("echo", *words),)) == (assessment.problem, assessment.segments)


# The security review's findings, one table each.


@pytest.mark.parametrize(
    "command",
    [
        "cat .*/.*/.*/config.toml",
        "cat */passwd",
        "cat link*",
        "ls *.py",
        "ls file?",
        "ls [ab]",
        "find * -name x",
        "rg needle *",
        "uniq *.txt",
        "grep -r --include=*.py x .",
        "cat < *.txt",
        "ls > out*",
        "A=* ls",
        "cat 'a'*",
    ],
)
def test_unquoted_glob_leaves_the_command_unparsed(command: str) -> None:
    """A glob may expand to `..` or to a link leading outside, so it always needs approval."""
    assessment = assess(command)
    assert (False, None) == (assessment.parsed, assessment.reviewed_safe_phrase)
    assert "a glob pattern is expanded by the shell at run time" == assessment.problem


@pytest.mark.parametrize(
    ("command", "rule"),
    [
        ("sudo cat *", "sudo"),
        ("dd if=* of=x", "dd"),
        ("rm -rf /*", RM_RECURSIVE_FORCE_ROOT),
        ("ls *; su", "su"),
        ("/usr/bin/sud? ls", "sudo"),
    ],
)
def test_glob_still_gets_hard_deny_checks(command: str, rule: str) -> None:
    """Hard-deny rules still read a command with a glob, on its best-effort tokens."""
    assessment = assess(command)
    assert (False, rule) == (assessment.parsed, assessment.hard_denied)


@pytest.mark.parametrize(
    "command",
    ["git status", "git diff", "git log", "git show", "git branch", "git log --oneline -3"],
)
def test_git_needs_approval(command: str) -> None:
    """Git runs programs from repository config (fsmonitor, diff drivers, textconv)."""
    assessment = assess(command)
    assert (True, None) == (assessment.parsed, assessment.reviewed_safe_phrase)


def test_no_default_reviewed_safe_phrase_is_git_or_diff() -> None:
    """Git runs repository-configured programs; diff follows links inside directories."""
    assert [] == [p for p in DEFAULT_REVIEWED_SAFE if p.split()[0] in {"git", "diff"}]


@pytest.mark.parametrize(
    "command",
    [
        "git log --output=x",
        "git diff --ext-diff",
        "git branch new",
        "git branch -D old",
        "git branch --unset-upstream",
        "git branch 0 <x",
    ],
)
def test_configured_git_phrase_still_refuses_write_options(command: str) -> None:
    """A policy that reviews git phrases itself still gets the write-option checks."""
    policy = ShellPolicy(reviewed_safe=("git log", "git diff", "git branch"))
    assessment = assess_command(command, policy)
    assert (True, None) == (assessment.parsed, assessment.reviewed_safe_phrase)


@pytest.mark.parametrize(
    "command",
    [
        "sort --files0-from=list",
        "sort --files0-from list",
        "wc --files0-from=list",
        "du --files0-from=list",
        "grep -R x",
        "grep -rR x .",
        "grep --dereference-recursive x .",
        "rg -L x",
        "rg --follow x",
        "find -L .",
        "find . -follow",
        "find -files0-from list",
        "tree -l",
        "tree -fl src",
        "du -L",
        "du --dereference .",
        "ls -L",
        "ls -RL src",
        "ls --dereference",
        "file -f names",
        "file --files-from=names",
        "sort -T dir a",
    ],
)
def test_option_that_reads_named_files_or_follows_links_is_not_reviewed_safe(
    command: str,
) -> None:
    """Name lists and followed links reach files no path check sees; `sort -T` writes."""
    assessment = assess(command)
    assert (True, None, None) == (
        assessment.parsed,
        assessment.hard_denied,
        assessment.reviewed_safe_phrase,
    )


@pytest.mark.parametrize(
    "command",
    [
        "cd /tmp && ls",
        "cd src; cat x",
        "cd",
        "pushd src",
        "popd",
        "ls && cd ..",
        "command cd x",
        "sh -c 'cd /; cat etc/passwd'",
    ],
)
def test_changing_directory_leaves_the_command_unparsed(command: str) -> None:
    """After `cd`, relative paths name other files than the ones checked."""
    assessment = assess(command)
    assert (False, None) == (assessment.parsed, assessment.reviewed_safe_phrase)
    assert "changes the working directory" in assessment.problem


@pytest.mark.parametrize(
    ("command", "rule"),
    [
        ("env -S 'sudo ls'", "sudo"),
        ("env --split-string='sudo ls'", "sudo"),
        ("env --split 'sudo ls'", "sudo"),
        ("env -S'sudo ls'", "sudo"),
        ("env -iS 'sudo ls'", "sudo"),
        ("env -S 'sudo\\_ls'", "sudo"),
        ("env -S '-u HOME sudo' ls", "sudo"),
        ("env -S 'env -S \"sudo ls\"'", "sudo"),
        ("sh -c 'sudo ls'", "sudo"),
        ("bash -c 'sudo ls'", "sudo"),
        ("dash -c 'sudo ls'", "sudo"),
        ("zsh -c 'sudo ls'", "sudo"),
        ("ksh -c 'sudo ls'", "sudo"),
        ("bash -lc 'sudo ls'", "sudo"),
        ("bash -o pipefail -c 'sudo ls'", "sudo"),
        ("/bin/sh -c 'ls; sudo ls'", "sudo"),
        ("sh -c 'rm -rf /'", "rm -rf /"),
        ("sh -c \"sh -c 'sudo ls'\"", "sudo"),
        ("eval 'sudo ls'", "sudo"),
        ("eval sudo ls", "sudo"),
        ("command eval 'ls && sudo ls'", "sudo"),
        ("xargs sh -c 'sudo ls'", "sudo"),
        ("stdbuf -o0 sudo ls", "sudo"),
        ("stdbuf -o 0 sudo ls", "sudo"),
        ("stdbuf --output=0 sudo ls", "sudo"),
        ("setsid sudo ls", "sudo"),
        ("setsid -f sudo ls", "sudo"),
        ("chroot /x sudo ls", "sudo"),
        ("chroot --userspec=1:1 /x sudo ls", "sudo"),
        ("busybox dd if=/dev/zero of=/dev/sda", "dd"),
        ("busybox su", "su"),
        ("busybox sh -c reboot", "reboot"),
        ("xargs sudo", "sudo"),
        ("nohup sudo ls", "sudo"),
        ("timeout 5 sudo ls", "sudo"),
        ("timeout --sig KILL 5 sudo ls", "sudo"),
        ("timeout -sKILL 5 sudo ls", "sudo"),
        ("nice sudo ls", "sudo"),
        ("nice -n5 sudo ls", "sudo"),
        ("find . -exec sudo rm {} \\;", "sudo"),
        ("find . -name x -execdir reboot \\;", "reboot"),
        (nested_shell("sudo ls", MAX_NESTING), "sudo"),
        (nested_shell("sudo ls", MAX_NESTING + 2), "sudo"),
    ],
)
def test_hard_deny_sees_through_strings_and_more_wrappers(command: str, rule: str) -> None:
    """`env -S`, shell `-c` and `eval` strings are read in turn; more wrappers are unwrapped."""
    assessment = assess(command)
    assert (rule, None) == (assessment.hard_denied, assessment.reviewed_safe_phrase)


@pytest.mark.parametrize(
    "command",
    [
        "sh -c 'echo sudo'",
        "env -S 'echo sudo'",
        "eval echo sudo",
        "bash script.sh sudo",
        "find . -name sudo -print",
    ],
)
def test_string_naming_a_denied_command_as_an_argument_is_not_denied(command: str) -> None:
    """Inner command lines are read as commands, not searched for words."""
    assert None is assess(command).hard_denied


def test_nest_too_deep_to_read_is_unparsed() -> None:
    """Deeper than `MAX_NESTING` the command cannot be read, though it is still judged."""
    within, beyond = (
        assess(nested_shell("ls", MAX_NESTING)),
        assess(nested_shell("ls", MAX_NESTING + 1)),
    )
    assert (True, None) == (within.parsed, within.hard_denied)
    assert (False, None) == (beyond.parsed, beyond.hard_denied)
    assert "the command runs more wrapped or nested commands than can be read" == beyond.problem


def test_many_command_strings_are_unparsed() -> None:
    """Too many command lines run from strings leave the command unparsed."""
    assessment = assess("sh -c " + " ".join(["ls"] * 40))
    assert (False, None) == (assessment.parsed, assessment.hard_denied)


@pytest.mark.parametrize(
    ("command", "problem"),
    [
        ("sh -c 'ls *'", "a command line it runs is not parsed: a glob pattern"),
        ("eval 'ls; (ls)'", "a command line it runs is not parsed: subshells"),
        ("bash -c 'cat <<EOF'", "a command line it runs is not parsed: here-documents"),
        ("env -S 'ls #x'", "a command line it runs is not parsed: comments"),
    ],
)
def test_unparsed_command_string_leaves_the_command_unparsed(command: str, problem: str) -> None:
    """The outer command is no more readable than the command line it runs."""
    assessment = assess(command)
    assert (False, None) == (assessment.parsed, assessment.reviewed_safe_phrase)
    assert assessment.problem.startswith(problem)


@pytest.mark.parametrize(
    ("command", "phrase"),
    [("sh -c ls", None), ("eval ls", None), ("env -S ls", None), ("sh script.sh", "sh")],
)
def test_command_run_from_a_string_is_never_reviewed_safe(command: str, phrase: str) -> None:
    """Even a policy that reviews `sh`, `eval` and `env` leaves their command strings alone."""
    policy = ShellPolicy(reviewed_safe=("sh", "eval", "env", "ls"))
    assessment = assess_command(command, policy)
    assert (True, phrase) == (assessment.parsed, assessment.reviewed_safe_phrase)


@pytest.mark.parametrize(
    "command",
    ["ls " + ";" * 300, "ls " + ">" * 300, "ls " + "&" * 300 + " x", nested_shell("ls *", 3)],
    ids=["semicolons", "redirections", "ampersands", "nested"],
)
def test_problem_text_is_capped(command: str) -> None:
    """A problem is quoted in a rule, so it stays short however long the operator."""
    assessment = assess(command)
    assert not assessment.parsed
    assert 0 < len(assessment.problem) <= MAX_PROBLEM_CHARS


@given(SHELLISH)
def test_problem_text_is_always_capped(command: str) -> None:
    """No command produces a problem longer than the cap."""
    assert len(assess(command * 20).problem) <= MAX_PROBLEM_CHARS


@pytest.mark.parametrize("phrase", ["", "git  status", " ls"])
def test_phrase_type_rejects_a_bad_phrase_with_value_error(phrase: str) -> None:
    """The config layer reuses `Phrase`; a bad phrase is a ValueError there too."""
    with pytest.raises(ValueError, match="single spaces"):
        TypeAdapter(Phrase).validate_python(phrase)


def test_phrase_type_accepts_single_spaced_words() -> None:
    """A valid phrase comes back unchanged."""
    assert "git status" == TypeAdapter(Phrase).validate_python("git status")
