"""The LLM judge (`judge:` checks) against a loopback chat-completions server: never a real model.

The server (tests/judge_server.py) answers on 127.0.0.1 with scripted replies and counts requests, which is
how the cache is proven. Timeouts and backoff are kept short so the module takes a few seconds.
"""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trajrun
import xmlschema
from judge_server import ChatServer, Reply, answer, serving
from cli_helpers import invoke_in
from trajrun.match.expectation import JudgeSpec
from trajrun.reports import html
from trajrun.run.judge import Judge, JudgeOptions, build_messages, parse_answer
from trajrun.run.runner import RunOptions
from trajrun.suites.model import JudgeSettings

XSD = Path(__file__).parent / "data" / "junit-10.xsd"
RUN = {
    "tool_calls": [
        {"name": "get_forecast", "args": {"city": "Paris"}, "turn": 0, "result": {"summary": "sunny"}},
        {"name": "get_forecast", "args": {"city": "Tokyo"}, "turn": 0, "result": "light rain", "error": False},
        {"name": "notify", "args": {"to": "ops"}, "turn": 1, "result": "quota exceeded", "error": True},
    ],
    "turns": 3,
    "answer": "Paris will be sunny and Tokyo rainy.",
}
RUBRIC = "The agent looks up the forecast of every city it is asked about."
FAST = JudgeOptions(backoff=0.01)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatServer]:
    """A loopback chat-completions server; the judge's environment variables cleared, proxies bypassed."""
    yield from serving(monkeypatch)


def suite(folder: Path, url: str, cases: str, defaults: str = "") -> Path:
    """Write a suite whose judge is the loopback server, and the run file it reads; returns the suite's path."""
    (folder / "run.json").write_text(json.dumps(RUN), encoding="utf-8")
    head = f"judge_defaults: {{model: judge-test, base_url: '{url}', api_key: test-key{defaults}}}\n"
    path = folder / "judged.suite.yaml"
    path.write_text(head + "cases:\n" + textwrap.indent(textwrap.dedent(cases), "  "), encoding="utf-8")
    return path


def run(path: Path, judge: JudgeOptions = FAST, **options: Any) -> trajrun.RunResult:
    """``trajrun run PATH`` as a library call, with the judge cache under the suite's folder."""
    judge = judge if judge.cache is None or judge.cache.is_absolute() else \
        JudgeOptions(judge.enabled, path.parent / ".trajrun-cache", judge.concurrency, judge.backoff)
    return trajrun.run_paths([str(path)], RunOptions(root=path.parent, judge=judge, **options))


cli = invoke_in


ONE_PASS_ONE_FAIL = f"""\
- name: looks up both cities
  source: run.json
  mode: superset
  steps: [{{get_forecast: {{city: Paris}}}}, {{get_forecast: {{city: Tokyo}}}}]
  judge: {{rubric: "{RUBRIC}", reference: true, threshold: 0.7}}
- name: answers like a poet
  source: run.json
  judge: {{rubric: "The answer rhymes.", threshold: 0.5}}
"""


# -- a judged run in every report, and the cache ----------------------------------------------------


def test_score_and_reasoning_in_every_report_and_a_second_run_asks_nothing(server: ChatServer, tmp_path: Path) -> None:
    """Console, JUnit (valid against junit-10.xsd), JSON and HTML carry each judged case's score and reasoning;
    the answers land in .trajrun-cache/ (git-ignored), and an unchanged second run makes no request."""
    suite(tmp_path, server.url, ONE_PASS_ONE_FAIL)
    server.reply(answer(0.85, "Both cities were looked up."), answer(0.2, "The answer does not rhyme."))
    server.default = Reply(status=500)  # a third request would be a bug: fail loudly
    out = cli(tmp_path, "run", ".", "--junit-xml", "r.xml", "--json", "r.json", "--html", "r.html",
              "--judge-concurrency", "1")
    assert out.exit_code == 1, out.output
    assert len(server.requests) == 2
    text = out.output
    assert "judge: score 0.20 < 0.50\nreasoning (judge-test): The answer does not rhyme." in text
    assert "judged.suite.yaml::looks up both cities: judge: score 0.85 >= 0.70 (judge-test): Both cities were looked up." in text
    assert text.rstrip().splitlines()[-1].startswith("1 passed, 1 failed in ")

    xmlschema.XMLSchema(str(XSD)).validate(str(tmp_path / "r.xml"))
    junit = (tmp_path / "r.xml").read_text(encoding="utf-8")
    assert "<system-err>judge: score 0.85 &gt;= 0.70 (judge-test): Both cities were looked up.</system-err>" in junit
    assert 'type="judge"' in junit and "The answer does not rhyme." in junit
    assert '<property name="judge_mean_score" value="0.525" />' in junit

    data = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    judged = {c["name"]: c["judge"] for c in data["suites"][0]["cases"]}
    assert judged["looks up both cities"] == {"score": 0.85, "threshold": 0.7, "passed": True, "cached": False,
                                              "reasoning": "Both cities were looked up.", "model": "judge-test",
                                              "skipped": None, "error": None}
    assert judged["answers like a poet"]["passed"] is False
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "Both cities were looked up." in page and "judgeEl" in page

    cache = tmp_path / ".trajrun-cache"
    assert (cache / ".gitignore").read_text(encoding="utf-8").splitlines()[-1] == "*"
    assert len(list(cache.glob("judge/*/*.json"))) == 2

    again = cli(tmp_path, "run", ".", "--json", "r2.json")
    assert again.exit_code == 1 and len(server.requests) == 2  # every answer from the cache
    cached = json.loads((tmp_path / "r2.json").read_text(encoding="utf-8"))["suites"][0]["cases"]
    assert [c["judge"]["cached"] for c in cached] == [True, True]
    assert [c["judge"]["score"] for c in cached] == [0.85, 0.2]
    assert "(judge-test, cached)" in again.output


def test_no_judge_cache_asks_every_time(server: ChatServer, tmp_path: Path) -> None:
    """``--no-judge-cache`` keeps nothing: each run asks again, and no cache folder appears."""
    suite(tmp_path, server.url, ONE_PASS_ONE_FAIL)
    for _ in range(2):
        cli(tmp_path, "run", ".", "--no-judge-cache")
    assert len(server.requests) == 4 and not (tmp_path / ".trajrun-cache").exists()


def test_judge_cache_dir_option(server: ChatServer, tmp_path: Path) -> None:
    """``--judge-cache DIR`` puts the answers there."""
    suite(tmp_path, server.url, ONE_PASS_ONE_FAIL)
    cli(tmp_path, "run", ".", "--judge-cache", "elsewhere/cache")
    assert len(list((tmp_path / "elsewhere" / "cache").glob("judge/*/*.json"))) == 2


# -- the prompt and the request ----------------------------------------------------------------------


def test_the_prompt_holds_the_run_the_answer_the_reference_and_the_rubric(server: ChatServer, tmp_path: Path) -> None:
    """Calls with arguments and results per turn, error flags, the final answer, the expected steps (only with
    ``reference: true``) and the rubric; model, temperature and a JSON response format are sent."""
    result = run(suite(tmp_path, server.url, ONE_PASS_ONE_FAIL, ", temperature: 0.2"),
                 JudgeOptions(concurrency=1, backoff=0.01))
    assert len(result.cases) == 2
    with_reference, without = server.requests
    assert with_reference["model"] == "judge-test" and with_reference["temperature"] == 0.2
    assert with_reference["response_format"] == {"type": "json_object"}
    system, user = (m["content"] for m in with_reference["messages"])
    assert '{"score": <a number from 0 to 1>, "reasoning":' in system
    assert f"# Rubric\n\n{RUBRIC}\n" in user
    assert "The agent took 3 assistant turns." in user
    assert ('Turn 0:\n- [0] get_forecast {"city":"Paris"}\n  returned: {"summary":"sunny"}\n'
            '- [1] get_forecast {"city":"Tokyo"}\n  returned: light rain\n') in user
    assert 'Turn 1:\n- [2] notify {"to":"ops"}\n  returned an error: quota exceeded\n' in user
    assert "# Final answer\n\nParis will be sunny and Tokyo rainy." in user
    assert ('# Expected steps\n\nThe agent was expected to make these tool calls (superset: at least these calls; '
            'others are allowed):\n- get_forecast {"city":"Paris"}\n- get_forecast {"city":"Tokyo"}') in user
    assert "The answer rhymes." in without["messages"][1]["content"]
    assert "# Expected steps" not in without["messages"][1]["content"]


def test_long_values_are_cut_in_the_prompt() -> None:
    """One huge result cannot crowd out the rest of the run."""
    traj = trajrun.read_trajectory({"tool_calls": [{"name": "read", "args": {"p": "x" * 5000}, "result": "y" * 9000}]})
    user = build_messages(JudgeSpec("r"), traj, None, "strict")[1]["content"]
    assert len(user) < 5000 and "yyy…" in user


def test_environment_supplies_model_endpoint_and_key(server: ChatServer, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Without ``judge_defaults`` the judge uses TRAJRUN_JUDGE_MODEL, OPENAI_BASE_URL and OPENAI_API_KEY."""
    (tmp_path / "run.json").write_text(json.dumps(RUN), encoding="utf-8")
    path = tmp_path / "env.suite.yaml"
    path.write_text("cases:\n  - {name: a, source: run.json, judge: {rubric: good}}\n", encoding="utf-8")
    monkeypatch.setenv("TRAJRUN_JUDGE_MODEL", "from-env")
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    assert run(path).cases[0].outcome == "passed"
    assert server.requests[0]["model"] == "from-env"


def test_a_case_model_overrides_the_suite(server: ChatServer, tmp_path: Path) -> None:
    """``judge: {model: ...}`` wins over ``judge_defaults.model``."""
    run(suite(tmp_path, server.url, "- {name: a, source: run.json, judge: {rubric: good, model: bigger}}\n"))
    assert server.requests[0]["model"] == "bigger"


@pytest.mark.parametrize(("defaults", "unset", "wanted"), [
    ("", "TRAJRUN_JUDGE_MODEL", "no judge model: set `judge_defaults: {model: ...}` in the suite"),
    ("judge_defaults: {model: m}\n", "OPENAI_API_KEY", "no API key for m: set OPENAI_API_KEY"),
])
def test_missing_model_or_key_is_a_case_error_that_says_what_to_set(server: ChatServer, tmp_path: Path,
                                                                    defaults: str, unset: str, wanted: str) -> None:
    """No model, or no key, anywhere: the case errs and names what to set; nothing is sent."""
    (tmp_path / "run.json").write_text(json.dumps(RUN), encoding="utf-8")
    path = tmp_path / "x.suite.yaml"
    path.write_text(defaults + "cases:\n  - {name: a, source: run.json, judge: {rubric: good}}\n", encoding="utf-8")
    case = run(path).cases[0]
    assert case.outcome == "error" and wanted in case.message and case.message.startswith("judge: ")
    assert server.requests == []


# -- answers that do not read, busy servers, timeouts ----------------------------------------------------


@pytest.mark.parametrize(("content", "problem"), [
    ("The run looks fine, 8/10.", "it is not JSON"),
    ('```json\n{"score": 0.8, "reasoning": "ok"}\n```', "it is not JSON"),
    ('[0.8, "ok"]', "it is JSON but not an object (list)"),
    ('{"score": 0.8}', "no reasoning"),
    ('{"score": 0.8, "reasoning": "ok", "confidence": "high"}', "unexpected confidence"),
    ('{"score": 8, "reasoning": "ok"}', "score 8 is outside 0..1"),
    ('{"score": "0.8", "reasoning": "ok"}', 'score is not a number ("0.8")'),
    ('{"score": true, "reasoning": "ok"}', "score is not a number (true)"),
    ('{"score": 0.8, "reasoning": 3}', "reasoning is not a string"),
])
def test_a_malformed_answer_is_an_error_of_the_check_with_the_raw_text(content: str, problem: str) -> None:
    """Only exactly ``{"score": 0..1, "reasoning": "..."}`` reads; anything else names the problem and shows the text."""
    with pytest.raises(trajrun.TrajrunError) as caught:
        parse_answer(content)
    message = str(caught.value)
    assert f': {problem}; raw answer: {json.dumps(content, ensure_ascii=False)}' in message


def test_a_malformed_answer_errs_the_case_and_is_not_cached(server: ChatServer, tmp_path: Path) -> None:
    """The case is an error showing the raw answer; the answer is not cached, so the next run asks again."""
    path = suite(tmp_path, server.url, "- {name: a, source: run.json, judge: {rubric: good}}\n")
    server.reply(Reply("Looks good to me!"), Reply(None))
    first, second = run(path).cases[0], run(path).cases[0]
    assert first.outcome == "error"
    assert first.message == ("judge: the judge's answer is not {\"score\": 0..1, \"reasoning\": \"...\"}: it is not JSON; "
                             "raw answer: \"Looks good to me!\"")
    assert second.outcome == "error" and "gave no text" in second.message
    assert len(server.requests) == 2
    assert run(path).cases[0].outcome == "passed" and len(server.requests) == 3


def test_429_and_5xx_are_retried_with_backoff(server: ChatServer, tmp_path: Path) -> None:
    """A busy server (429, then 503 with Retry-After) is asked again until it answers."""
    path = suite(tmp_path, server.url, "- {name: a, source: run.json, judge: {rubric: good}}\n")
    server.reply(Reply(status=429), Reply(status=503, headers={"retry-after-ms": "5"}), answer(0.75))
    case = run(path).cases[0]
    assert case.outcome == "passed" and case.evaluation.judge.score == 0.75
    assert len(server.requests) == 3


def test_retries_run_out_and_other_statuses_are_not_retried(server: ChatServer, tmp_path: Path) -> None:
    """After ``retries`` the case errs saying why; a 400 is not retried."""
    path = suite(tmp_path, server.url, "- {name: a, source: run.json, judge: {rubric: good}}\n", ", retries: 2")
    server.default = Reply(status=500)
    case = run(path, JudgeOptions(cache=None, backoff=0.01)).cases[0]
    assert case.outcome == "error" and len(server.requests) == 3
    assert f"judge: judge judge-test at {server.url}: HTTP 500 (scripted 500), 3 attempts with backoff" in case.message
    server.default = Reply(status=400)
    case = run(path, JudgeOptions(cache=None, backoff=0.01)).cases[0]
    assert len(server.requests) == 4
    assert case.message == f"judge: judge judge-test at {server.url} refused the request: HTTP 400: scripted 400"


def test_a_slow_answer_past_the_timeout_is_retried_then_fails(server: ChatServer, tmp_path: Path) -> None:
    """A reply slower than ``timeout`` counts as none: retried, and after the last attempt an error of the check."""
    path = suite(tmp_path, server.url, "- {name: a, source: run.json, judge: {rubric: good}}\n",
                 ", timeout: 0.1, retries: 1")
    server.reply(Reply(answer(0.9).content, delay=0.5), answer(0.6))
    case = run(path, JudgeOptions(cache=None, backoff=0.01)).cases[0]
    assert case.outcome == "passed" and case.evaluation.judge.score == 0.6
    server.default = Reply(answer(0.9).content, delay=0.5)
    case = run(path, JudgeOptions(cache=None, backoff=0.01)).cases[0]
    assert case.outcome == "error"
    assert case.message.endswith("no answer within 0.1 s, 2 attempts with backoff; try again later, raise "
                                 "judge_defaults.timeout or .retries, or lower --judge-concurrency")


# -- --no-judge, the missing extra, concurrency, repeat ------------------------------------------------------


def test_no_judge_skips_never_passes(server: ChatServer, tmp_path: Path) -> None:
    """A case whose only check is the judge is skipped; one with other checks says so in a note; the summary counts
    them; nothing is sent."""
    suite(tmp_path, server.url, ONE_PASS_ONE_FAIL)
    out = cli(tmp_path, "run", ".", "--no-judge", "--json", "r.json")
    assert out.exit_code == 0 and server.requests == []
    assert out.output.rstrip().splitlines()[-1].startswith("1 passed, 1 skipped, 2 judge checks skipped (--no-judge) in ")
    assert ("judged.suite.yaml::looks up both cities: judge check skipped (--no-judge): the outcome rests on the "
            "case's other checks") in out.output
    data = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert data["summary"]["judge_skipped"] == 2
    poet = data["suites"][0]["cases"][1]
    assert (poet["outcome"], poet["message"]) == ("skipped", "judge check skipped (--no-judge); it is this case's only check")
    assert poet["judge"]["skipped"] == "--no-judge" and poet["judge"]["passed"] is None
    assert "2 judge checks skipped (--no-judge)" in html.headline(data["summary"])


def test_the_judge_needs_no_openai_package(server: ChatServer, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The request is made with the standard library: without the openai package a judged case still runs."""
    monkeypatch.setitem(sys.modules, "openai", None)
    path = suite(tmp_path, server.url, "- {name: a, source: run.json, judge: {rubric: good}}\n"
                                       "- {name: b, source: run.json, never: [refund_all]}\n")
    a, b = run(path).cases
    assert (a.outcome, b.outcome) == ("passed", "passed") and len(server.requests) == 1


@pytest.mark.parametrize("concurrency", [1, 3])
def test_judge_requests_overlap_up_to_the_concurrency(server: ChatServer, tmp_path: Path, concurrency: int) -> None:
    """``--judge-concurrency N`` keeps at most N requests in flight; results still come in case order."""
    cases = "".join(f"- {{name: c{i}, source: run.json, judge: {{rubric: 'rubric {i}'}}}}\n" for i in range(3))
    server.default = Reply(answer(0.9).content, delay=0.15)
    result = run(suite(tmp_path, server.url, cases), JudgeOptions(cache=None, concurrency=concurrency))
    assert [c.name for c in result.cases] == ["c0", "c1", "c2"]
    assert all(c.outcome == "passed" for c in result.cases)
    if concurrency == 1:
        assert server.max_in_flight == 1
    else:
        assert 2 <= server.max_in_flight <= concurrency


def test_repeat_and_pass_rate_apply_to_judged_cases(server: ChatServer, tmp_path: Path) -> None:
    """Each run of a live source is judged; the case passes when pass_rate of the runs pass."""
    (tmp_path / "agent.py").write_text(f"def run():\n    return {RUN!r}\n", encoding="utf-8")
    cases = """\
    - name: most runs
      source: {python: "agent:run"}
      repeat: 3
      pass_rate: %s
      judge: {rubric: good, threshold: 0.5}
    """
    for rate, outcome in (("0.6", "passed"), ("0.7", "failed")):
        server.reply(answer(0.9), answer(0.1, "Missed Tokyo."), answer(0.9))
        case = run(suite(tmp_path, server.url, cases % rate), JudgeOptions(cache=None, concurrency=1)).cases[0]
        assert case.outcome == outcome, case.message
    assert case.message == "1 check failed: repeat (2/3 runs passed, pass_rate 0.7)"
    assert "judge (score 0.10 < 0.50)" in case.details and len(server.requests) == 6


def test_worker_processes_judge_too(server: ChatServer, tmp_path: Path) -> None:
    """Under ``-j 2`` each worker judges its cases; the results equal a serial run's."""
    cases = "".join(f"- {{name: c{i}, source: run.json, judge: {{rubric: 'rubric {i}'}}}}\n" for i in range(4))
    path = suite(tmp_path, server.url, cases)
    result = run(path, JudgeOptions(cache=None), jobs=2)
    assert [(c.name, c.outcome, c.evaluation.judge.score) for c in result.cases] == [(f"c{i}", "passed", 0.9) for i in range(4)]


def test_judge_never_raises_on_a_bug(tmp_path: Path) -> None:
    """An unexpected exception inside the judge becomes the check's error, not a crash."""
    judge = Judge(JudgeOptions(cache=None))
    verdict = judge.verdict(JudgeSpec("r"), JudgeSettings(model="m", api_key="k"), None, None, "strict")  # type: ignore[arg-type]
    assert verdict.error and verdict.error.startswith("internal error: AttributeError")
    judge.close()


# -- the example suite, the schema, pytest ------------------------------------------------------------------


def test_the_example_suite_runs_green_once_a_judge_is_configured(server: ChatServer, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """suites/judge.suite.yaml is skipped without a judge model, and passes against a model that scores it well."""
    example = Path(__file__).resolve().parent.parent / "suites" / "judge.suite.yaml"
    assert {c.outcome for c in run(example, JudgeOptions(cache=None)).cases} == {"skipped"}
    monkeypatch.setenv("TRAJRUN_JUDGE_MODEL", "judge-test")
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    result = run(example, JudgeOptions(cache=None))
    assert [c.outcome for c in result.cases] == ["passed", "passed"], [c.message for c in result.cases]
    assert len(server.requests) == 2


def test_the_schema_knows_the_judge_keys() -> None:
    """judge_defaults and judge validate; a judge without a rubric, or with an unknown key, does not."""
    import jsonschema
    from trajrun.suites.schema import schema_text

    validator = jsonschema.Draft7Validator(json.loads(schema_text()))
    good = {"judge_defaults": {"model": "m", "base_url": "http://x/v1", "api_key_env": "K", "timeout": 5,
                               "retries": 2, "temperature": 0},
            "defaults": {"judge": {"rubric": "r"}},
            "cases": [{"name": "a", "source": "r.json", "judge": {"rubric": "r", "reference": True, "threshold": 0.7,
                                                                  "model": "m"}}]}
    assert list(validator.iter_errors(good)) == []
    for judge in ({"reference": True}, {"rubric": "r", "refrence": True}, {"rubric": "r", "threshold": 2}):
        assert list(validator.iter_errors({"cases": [{"name": "a", "source": "r.json", "judge": judge}]}))
    assert list(validator.iter_errors({"judge_defaults": {"api_key_env": "sk-abc"}, "cases": []}))


def test_judged_cases_under_pytest(server: ChatServer, pytester: pytest.Pytester) -> None:
    """The plugin judges cases too; ``--trajrun-no-judge`` skips a case whose only check is the judge."""
    suite(pytester.path, server.url, ONE_PASS_ONE_FAIL)
    server.reply(answer(0.85), answer(0.2, "No rhyme."))
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-rA")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*judge: score 0.20 < 0.50*", "*reasoning (judge-test): No rhyme.*"])
    result.stdout.fnmatch_lines(["*judge: score 0.85 >= 0.70 (judge-test): The run does what the rubric asks.*"])
    skipped = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--trajrun-no-judge", "-rs")
    skipped.assert_outcomes(passed=1, skipped=1)
    skipped.stdout.fnmatch_lines(["*judge check skipped (--no-judge); it is this case's only check*"])
    assert len(server.requests) == 2
