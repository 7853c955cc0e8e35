"""Maximum bipartite matching where left nodes have capacities (Hopcroft–Karp style phases).

Left nodes are classes of identical expected steps (capacity = how many such steps), right nodes
are actual calls (capacity 1). Grouping identical steps keeps the graph small: 10,000 identical
steps against 10,000 calls is one left node with 10,000 edges, not 10^8.

The ``zip`` calls on the matching path go without ``strict=`` (``noqa: B905``): the keyword costs an
argument parse per call, more than zipping a few items, and they run per class, turn or path.
"""

from __future__ import annotations


def max_matching(caps: list[int], adj: list[list[int]], n_right: int) -> list[int]:
    """Return ``owner``: for each right node, the left node it is matched to, or -1.

    ``adj[l]`` lists the right nodes left node ``l`` may take; ``caps[l]`` how many it may take.
    """
    owner = [-1] * n_right
    load = [0] * len(caps)
    _greedy(caps, adj, owner, load)
    while True:
        dist = _layers(caps, adj, owner, load)
        if dist is None:
            return owner
        ptr = [0] * len(caps)
        for source in range(len(caps)):
            while (
                load[source] < caps[source]
                and dist[source] == 0
                and _augment(source, adj, owner, dist, ptr)
            ):
                load[source] += 1


def _greedy(caps: list[int], adj: list[list[int]], owner: list[int], load: list[int]) -> None:
    """A first pairing: each left node takes free right nodes in order (most of the answer)."""
    for left, rights in enumerate(adj):
        for right in rights:
            if load[left] >= caps[left]:
                break
            if owner[right] < 0:
                owner[right] = left
                load[left] += 1


def _layers(
    caps: list[int], adj: list[list[int]], owner: list[int], load: list[int]
) -> list[int] | None:
    """BFS distances from left nodes with spare capacity; ``None`` when no augmenting path
    exists."""
    dist = [-1] * len(caps)
    queue = [left for left in range(len(caps)) if load[left] < caps[left]]
    for left in queue:
        dist[left] = 0
    found, head = False, 0
    while head < len(queue):
        left = queue[head]
        head += 1
        for right in adj[left]:
            other = owner[right]
            if other < 0:
                found = True
            elif dist[other] < 0:
                dist[other] = dist[left] + 1
                queue.append(other)
    return dist if found else None


def _augment(
    source: int, adj: list[list[int]], owner: list[int], dist: list[int], ptr: list[int]
) -> bool:
    """Find one augmenting path from ``source`` along the layers (iterative DFS) and flip it."""
    stack, taken = [source], []
    while stack:
        left = stack[-1]
        rights = adj[left]
        advanced = False
        while ptr[left] < len(rights):
            right = rights[ptr[left]]
            ptr[left] += 1
            other = owner[right]
            if other < 0:
                taken.append(right)
                for holder, node in zip(stack, taken):  # noqa: B905
                    owner[node] = holder
                return True
            if dist[other] == dist[left] + 1:
                stack.append(other)
                taken.append(right)
                advanced = True
                break
        if not advanced:
            dist[left] = -2
            stack.pop()
            if taken:
                taken.pop()
    return False
