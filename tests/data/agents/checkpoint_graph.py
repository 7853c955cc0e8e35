"""Write a LangGraph checkpoint database with a real graph: a scripted chat model, a ToolNode, a SqliteSaver.

No model and no network: each thread's model replies are scripted ``AIMessage``s (tool calls, then an
answer) played by langchain-core's ``GenericFakeChatModel``; the tools are real ``@tool`` functions run by
LangGraph's ``ToolNode``. ``python tests/data/agents/checkpoint_graph.py FILE`` (re)writes FILE, the way
``suites/runs/checkpoints/trips.sqlite`` was made.
"""

from __future__ import annotations

import sqlite3
import sys
from contextlib import closing
from pathlib import Path

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

FORECASTS = {"Paris": "sunny, 24°C", "Tokyo": "light rain, 19°C", "Oslo": "cloudy, 12°C"}
THREADS = {"trip-paris-tokyo": ["Paris", "Tokyo"], "trip-oslo": ["Oslo"]}


@tool
def get_forecast(city: str, days: int = 1) -> str:
    """The weather forecast for a city."""
    return FORECASTS[city]


def _replies(cities: list[str]) -> list[AIMessage]:
    """The scripted model: one turn asking for every forecast at once, then the answer."""
    calls = [{"name": "get_forecast", "args": {"city": city, "days": 1}, "id": f"call_{city.lower()}"}
             for city in cities]
    answer = "; ".join(f"{city}: {FORECASTS[city]}" for city in cities)
    asking = {"input_tokens": 40, "output_tokens": 22, "total_tokens": 62}
    return [AIMessage("", tool_calls=calls, usage_metadata=asking),
            AIMessage(answer, usage_metadata={"input_tokens": 95, "output_tokens": 16, "total_tokens": 111})]


def _graph(model: GenericFakeChatModel, saver: SqliteSaver):  # type: ignore[no-untyped-def]
    """agent → tools → agent, until the model stops calling tools."""
    graph = StateGraph(MessagesState)
    graph.add_node("agent", lambda state: {"messages": [model.invoke(state["messages"])]})
    graph.add_node("tools", ToolNode([get_forecast]))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer=saver)


def write_database(path: Path, threads: dict[str, list[str]] = THREADS) -> None:
    """Run the graph once per thread, checkpointing into the SQLite database at ``path``."""
    with closing(sqlite3.connect(path, check_same_thread=False)) as conn:
        saver = SqliteSaver(conn)
        for thread, cities in threads.items():
            model = GenericFakeChatModel(messages=iter(_replies(cities)))
            question = f"What is the weather tomorrow in {' and '.join(cities)}?"
            _graph(model, saver).invoke({"messages": [HumanMessage(question)]}, {"configurable": {"thread_id": thread}})


if __name__ == "__main__":
    target = Path(sys.argv[1])
    target.unlink(missing_ok=True)
    write_database(target)
