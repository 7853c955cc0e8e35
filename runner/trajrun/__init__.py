"""trajrun: check an agent's tool-call trajectory against YAML suites, report as JUnit.

The public library API. Names load on first use, so ``import trajrun`` stays cheap::

    import trajrun

    suite = trajrun.load_suite("suites/weather.suite.yaml")
    result = trajrun.run_suite(suite)                  # or trajrun.run_paths(["suites/"]),
                                                       # which runs like `trajrun run`
    traj = trajrun.load_trajectory("runs/paris.json")  # any format, detected
    evaluation = trajrun.evaluate(suite.cases[0].expect, traj)
"""

from __future__ import annotations

from importlib import import_module

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: `import trajrun` stays cheap

__version__ = "0.1.0"

_WHERE = {
    # trajectories: the normal form and its readers
    "Trajectory": "trajrun.trajectory",
    "ToolCall": "trajrun.trajectory",
    "Usage": "trajrun.trajectory",
    "read_trajectory": "trajrun.sources",
    "load_trajectory": "trajrun.sources",
    "FORMATS": "trajrun.sources",
    # expectations and their evaluation
    "Expectation": "trajrun.match.expectation",
    "Step": "trajrun.match.expectation",
    "steps_of": "trajrun.match.expectation",
    "evaluate": "trajrun.match.evaluate",
    "Evaluation": "trajrun.match.verdict",
    # suites and runs
    "Suite": "trajrun.suites.model",
    "Case": "trajrun.suites.model",
    "load_suite": "trajrun.suites.load",
    "run_paths": "trajrun.run.runner",
    "run_suite": "trajrun.run.runner",
    "RunOptions": "trajrun.run.runner",
    "RunResult": "trajrun.run.results",
    "SuiteResult": "trajrun.run.results",
    "CaseResult": "trajrun.run.results",
    # bulk evaluation: a case over every record
    "evaluate_bulk": "trajrun.run.bulk",
    "BulkSummary": "trajrun.run.bulk_results",
    # errors
    "TrajrunError": "trajrun.errors",
    "SuiteErrors": "trajrun.errors",
    "SourceError": "trajrun.errors",
}

__all__ = ["__version__", *_WHERE]


def __getattr__(name: str) -> object:
    """Import a public name's module on first use (PEP 562)."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'trajrun' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names, for completion."""
    return sorted(__all__)


if TYPE_CHECKING:  # the names as type checkers and editors see them (`X as X`: re-exported)
    from .errors import SourceError as SourceError
    from .errors import SuiteErrors as SuiteErrors
    from .errors import TrajrunError as TrajrunError
    from .match.evaluate import evaluate as evaluate
    from .match.expectation import Expectation as Expectation
    from .match.expectation import Step as Step
    from .match.expectation import steps_of as steps_of
    from .match.verdict import Evaluation as Evaluation
    from .run.bulk import evaluate_bulk as evaluate_bulk
    from .run.bulk_results import BulkSummary as BulkSummary
    from .run.results import CaseResult as CaseResult
    from .run.results import RunResult as RunResult
    from .run.results import SuiteResult as SuiteResult
    from .run.runner import RunOptions as RunOptions
    from .run.runner import run_paths as run_paths
    from .run.runner import run_suite as run_suite
    from .sources import FORMATS as FORMATS
    from .sources import load_trajectory as load_trajectory
    from .sources import read_trajectory as read_trajectory
    from .suites.load import load_suite as load_suite
    from .suites.model import Case as Case
    from .suites.model import Suite as Suite
    from .trajectory import ToolCall as ToolCall
    from .trajectory import Trajectory as Trajectory
    from .trajectory import Usage as Usage
