"""The console report: letters, -v lines, quiet mode, progress, the failures section and colours."""

from __future__ import annotations

import io

import pytest
from report_helpers import drive
from trajrun.match.verdict import CheckFailure, Evaluation
from trajrun.reports.console import ConsoleReporter, render_summary, rule, use_color
from trajrun.run.results import CaseResult, RunResult, SuiteResult

TABLE = (
    "steps: 1 missing\n"
    "  expected                  | actual                    | verdict\n"
    "  get_forecast {city: Rome} | get_forecast {city: Rome} | ok\n"
    "  search {q: rome}          | -                         | MISSING"
)


class FakeTTY(io.StringIO):
    """A text stream that claims to be a terminal."""

    def isatty(self) -> bool:
        """Pretend to be interactive."""
        return True


def case(file: str, name: str, outcome: str, **kw: object) -> CaseResult:
    """A case result in ``file`` with the id the runner gives it."""
    suite = file.rsplit("/", 1)[-1].split(".")[0]
    return CaseResult(case_id=f"{file}::{name}", suite=suite, name=name, file=file,
                      line=kw.pop("line", 5), outcome=outcome, **kw)  # type: ignore[arg-type]


W = "suites/weather.suite.yaml"
B = "suites/billing.suite.yaml"
BAD = "suites/bad.suite.yaml"
LOAD_ERRORS = (
    f"{BAD}:4:7: cases[0]: unknown key 'mdoe' in case 'x' — did you mean 'mode'?",
    f"{BAD}:9:3: cases[1]: case 'y' asserts nothing — add steps, golden or another check",
)


def sample_run() -> RunResult:
    """One load error, then every outcome across two suites, with a note on a passing case."""
    rome_eval = Evaluation(failures=(CheckFailure("steps", "1 missing", TABLE.split("\n", 1)[1]),), score=0.67)
    billing = SuiteResult("billing", B, cases=(
        case(B, "refund", "error", line=3, message="source runs/refund.json not found",
             details="error: source runs/refund.json not found", check_type="error"),
        case(B, "vip", "xpassed", line=12, message="XPASS(strict): vip pricing not done", check_type="xpass"),
    ))
    weather = SuiteResult("weather", W, cases=(
        case(W, "paris", "passed", notes=("golden file updated: golden/paris.yaml",)),
        case(W, "rome", "failed", line=14, message=rome_eval.message(), details=rome_eval.details(),
             check_type="steps", evaluation=rome_eval),
        case(W, "tokyo", "skipped", message="flaky upstream"),
        case(W, "oslo", "xfailed", message="known bug #12"),
    ))
    return RunResult((SuiteResult("bad", BAD, load_errors=LOAD_ERRORS), billing, weather), duration=0.12)


def output(run: RunResult, verbosity: int = 0, color: bool | None = False, stream: io.StringIO | None = None) -> str:
    """Everything the reporter printed for ``run``."""
    stream = stream if stream is not None else io.StringIO()
    drive(ConsoleReporter(stream, verbosity=verbosity, color=color), run)
    return stream.getvalue()


SECTIONS = "\n".join([
    rule("ERRORS", "=", 80),
    rule(f"ERROR loading {BAD}", "_", 80),
    *LOAD_ERRORS,
    rule(f"{B}::refund", "_", 80),
    f"{B}:3",
    "source runs/refund.json not found",
    "error: source runs/refund.json not found",
    rule("FAILURES", "=", 80),
    rule(f"{B}::vip", "_", 80),
    f"{B}:12",
    "XPASS(strict): vip pricing not done",
    rule(f"{W}::rome", "_", 80),
    f"{W}:14",
    "1 check failed: steps (1 missing)",
    TABLE,
    rule("notes", "=", 80),
    f"{W}::paris: golden file updated: golden/paris.yaml",
    rule("short test summary info", "=", 80),
    f"ERROR {BAD} - suite could not be loaded (2 errors)",
    f"ERROR {B}::refund - source runs/refund.json not found",
    f"XPASS {B}::vip - XPASS(strict): vip pricing not done",
    f"FAILED {W}::rome - 1 check failed: steps (1 missing)",
    "=" * 80,
    "1 passed, 1 failed, 2 errors, 1 skipped, 1 xfailed, 1 xpassed in 0.12s",
])


def test_rule_centres_the_title_like_pytest() -> None:
    """A separator is the title centred between runs of the character, filling the width."""
    assert rule("FAILURES", "=", 30) == "========== FAILURES =========="
    assert rule("odd", "_", 12) == "___ odd ____"
    assert rule("", "=", 5) == "====="


def done(line: str, percent: int) -> str:
    """``line`` ending, as pytest's lines do, with the share of cases done right-aligned to 80 columns."""
    return line + " " * (80 - len(line) - 6) + f"[{percent:3d}%]"


def test_dots_mode_prints_one_letter_per_case_per_suite_file() -> None:
    """Verbosity 0: pytest letters per suite file, each line ending with the share done, then sections and summary."""
    expected = f"{done(f'{BAD} E', 0)}\n{done(f'{B} EX', 33)}\n{done(f'{W} .Fsx', 100)}\n\n{SECTIONS}\n"
    assert output(sample_run()) == expected


def test_verbose_mode_prints_one_line_per_case() -> None:
    """Verbosity 1: ``id WORD``, with the reason after SKIPPED and XFAIL, and the share done."""
    expected = "\n".join([
        f"{BAD} ERROR (suite could not be loaded)",
        done(f"{B}::refund ERROR", 16),
        done(f"{B}::vip XPASS", 33),
        done(f"{W}::paris PASSED", 50),
        done(f"{W}::rome FAILED", 66),
        done(f"{W}::tokyo SKIPPED (flaky upstream)", 83),
        done(f"{W}::oslo XFAIL (known bug #12)", 100),
    ])
    assert output(sample_run(), verbosity=1) == f"{expected}\n\n{SECTIONS}\n"


def test_quiet_mode_prints_no_case_lines_and_ends_with_the_summary() -> None:
    """Verbosity -1: no letters or separator line, but failures still show."""
    text = output(sample_run(), verbosity=-1)
    assert text.startswith(rule("ERRORS", "=", 80))
    assert f"{W} .Fsx" not in text
    assert text.splitlines()[-2:] == [f"FAILED {W}::rome - 1 check failed: steps (1 missing)", sample_run().summary_line()]


def test_all_passed_run_prints_only_letters_separator_and_summary() -> None:
    """A green run has no sections: letters, a blank line, a separator, the summary."""
    run = RunResult((SuiteResult("weather", W, cases=(case(W, "a", "passed"), case(W, "b", "passed"))),), duration=0.5)
    assert output(run) == f"{done(f'{W} ..', 100)}\n\n{'=' * 80}\n2 passed in 0.50s\n"


@pytest.mark.parametrize("verbosity", [-1, 0, 1, 2])
def test_last_line_is_exactly_the_summary_line(verbosity: int) -> None:
    """Whatever the verbosity, the last line is RunResult.summary_line() verbatim."""
    run = sample_run()
    assert output(run, verbosity=verbosity).splitlines()[-1] == run.summary_line()


def test_colour_on_paints_letters_verdicts_and_headers() -> None:
    """With colour, letters and verdict words carry ANSI codes; the summary line stays plain."""
    run = sample_run()
    text = output(run, color=True)
    assert "\x1b[32m.\x1b[0m" in text and "\x1b[31mF\x1b[0m" in text
    assert "| \x1b[31mMISSING\x1b[0m" in text and "| \x1b[32mok\x1b[0m" in text
    assert "| \x1b[32mverdict" not in text
    assert text.splitlines()[-1] == run.summary_line()


def test_details_without_bars_colour_only_unambiguous_verdicts() -> None:
    """Outside a table column, MISSING is red but a value 'ok' mid-line stays plain."""
    body = "never: refund_all\ncalled with status ok here\nrefund_all MISSING"
    run = RunResult((SuiteResult("w", W, cases=(case(W, "a", "failed", message="m", details=body),)),))
    text = "\n".join(render_summary(run, color=True))
    assert "status ok here" in text and "\x1b[31mMISSING\x1b[0m" in text


def test_no_color_env_turns_colour_off_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """NO_COLOR set and non-empty disables colour even on a terminal and over FORCE_COLOR."""
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("FORCE_COLOR", "1")
    text = output(sample_run(), color=None, stream=FakeTTY())
    assert "\x1b[" not in text


def test_colour_defaults_follow_the_terminal_and_environment() -> None:
    """Auto colour: on for a terminal, off for a pipe, FORCE_COLOR forces, an explicit choice wins."""
    assert use_color(FakeTTY(), None, {}) is True
    assert use_color(io.StringIO(), None, {}) is False
    assert use_color(FakeTTY(), None, {"NO_COLOR": ""}) is True
    assert use_color(FakeTTY(), None, {"TERM": "dumb"}) is False
    assert use_color(io.StringIO(), None, {"FORCE_COLOR": "1"}) is True
    assert use_color(FakeTTY(), False, {"FORCE_COLOR": "1"}) is False
    assert use_color(io.StringIO(), True, {"NO_COLOR": "1"}) is True


def many_cases(n: int) -> RunResult:
    """A run of ``n`` passing cases in one suite."""
    return RunResult((SuiteResult("w", W, cases=tuple(case(W, f"c{i}", "passed") for i in range(n))),), duration=1.0)


def test_progress_percentage_redraws_in_place_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a terminal with 50+ cases, each letter redraws the line with ``[ NN%]`` at its end."""
    monkeypatch.setenv("COLUMNS", "40")
    text = output(many_cases(60), stream=FakeTTY())
    drawn = [line.rsplit("\r", 1)[1] for line in text.split("\n")[:3]]
    assert text.split("\n")[0].count("\r") == 6
    assert drawn == [f"{W} ......  [ 10%]", "." * 32 + "  [ 63%]", "." * 22 + " " * 12 + "[100%]"]


def test_no_progress_for_a_small_run_or_a_pipe() -> None:
    """Fewer than 50 cases on a terminal, or any size to a pipe, prints letters once, the share done at the line's end."""
    assert output(many_cases(10), stream=FakeTTY()).startswith(done(f"{W} {'.' * 10}", 100) + "\n")
    assert "\r" not in output(many_cases(60))
    assert output(many_cases(60)).startswith(f"{W} {'.' * 60} [100%]\n")


def test_control_characters_in_messages_are_escaped() -> None:
    """Escape codes and NULs from tool output reach the terminal as visible escapes."""
    bad = case(W, "a", "failed", message="got \x1b[2Jcleared\x00", details="actual: \x07bell\ud800")
    text = output(RunResult((SuiteResult("w", W, cases=(bad,)),)))
    assert "\\x1b[2Jcleared\\x00" in text and "\\x07bell\\ud800" in text
    assert "\x1b" not in text and "\x00" not in text


def test_letters_line_names_the_suite_by_its_id_path() -> None:
    """The letters line shows the root-relative path from the case id, not an absolute file."""
    absolute = CaseResult(case_id=f"{W}::a", suite="w", name="a", file=f"/home/ci/repo/{W}", line=3, outcome="passed")
    run = RunResult((SuiteResult("w", f"/home/ci/repo/{W}", cases=(absolute,)),))
    assert output(run).startswith(done(f"{W} .", 100) + "\n")
